// "waiting 4 min" on a pending approval card, counted live from the time the review was raised.
// Wrapped for Reflex by hitl_app/ui/components/card_parts.py. Plain JS (no JSX) on purpose.
//
// Props: raisedMs (epoch ms, server clock: when the interrupt was raised), serverMs (epoch ms,
// server clock: when the server sent this value). The browser's clock only measures the time
// since the value arrived, so a wrong browser clock does not change what is shown.
import { createElement as h, useEffect, useMemo, useState } from "react";

export function waitedLabel(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `waiting ${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `waiting ${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `waiting ${hours} h ${m % 60} min`;
  return `waiting ${Math.floor(hours / 24)} days`;
}

export function Waited({ raisedMs, serverMs, ...rest }) {
  // server time minus browser time, taken when the server's value arrives
  const offset = useMemo(() => (serverMs ? serverMs - Date.now() : 0), [serverMs]);
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  if (!raisedMs) return null;
  const waited = Math.max(0, now + offset - raisedMs);
  return h("span", { ...rest, "data-waited-ms": String(Math.round(waited)) }, waitedLabel(waited));
}
