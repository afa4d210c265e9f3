// <AfterPaint>: draws its children only once the page has painted without them, so the numbers and text
// of a page show before a costly child (a chart: recharts lays out and measures its axes as it mounts,
// ~200 ms on a 2-core machine) is drawn. Until then an empty box of minHeight keeps the child's place,
// so nothing below it moves. Wrapped for Reflex by hitl_app/ui/components/after_paint.py. Plain JS (no JSX).
import { createElement as h, useEffect, useState } from "react";

export function AfterPaint({ children, minHeight, ...rest }) {
  const [ready, setReady] = useState(false);
  useEffect(() => {
    let timer = 0;
    // the frame's callback runs before it paints; the timeout after it
    const frame = requestAnimationFrame(() => {
      timer = setTimeout(() => setReady(true), 0);
    });
    return () => {
      cancelAnimationFrame(frame);
      clearTimeout(timer);
    };
  }, []);
  const style = { minHeight, width: "100%" };
  return ready
    ? h("div", { ...rest, style }, children)
    : h("div", { ...rest, style, "aria-busy": "true" });
}
