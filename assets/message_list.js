// The thread's message rows as a virtualized list (react-virtuoso): only the rows near the screen are
// in the DOM, however long the thread; rows of any height are measured as they render. Wrapped for
// Reflex by hitl_app/ui/components/message_list.py. Plain JS (no JSX) on purpose.
//
// Props: children (the rows, one element each, as Reflex's foreach renders them), firstIndex (the
// thread position of the first row given: the rows before it are still on the server), scrollParent
// (the id of the element that scrolls: the thread column scrolls as one, with the live reply, the
// review and the notices below the list), onStartReached() (the reader scrolled up to the first row
// given while earlier ones exist: the server prepends earlier rows and firstIndex goes down by
// as many rows, which keeps what the reader looks at in place), laterCount (rows of the thread after the
// last row given: the server keeps a window of rows, and far up a long thread the latest leave it),
// onEndReached() (the reader scrolled down to the last row given while laterCount > 0: the server appends
// later rows; none leave the top, where the list would lose the reader's place), gap (px between rows).
// Other props (data-testid) go on the list's element.
import { Fragment, createElement as h, useCallback, useEffect, useRef, useState } from "react";
import { Virtuoso } from "react-virtuoso";

const NEAR_TOP_SCREENS = 1.5; // ask for earlier rows this many screens before the first row shows

const MEMO = Symbol.for("react.memo");

// The row elements inside children. Reflex compiles rx.foreach into one memoized component (displayName
// "Foreach") that maps the state list to rows; it is rendered here as a plain function (its only hooks
// read the state context, the same ones on every render) so that each row becomes one list item.
function rowsOf(children) {
  const out = [];
  const walk = (node) => {
    if (node === null || node === undefined || node === false || node === true) return;
    if (Array.isArray(node)) { node.forEach(walk); return; }
    const type = node.type;
    if (type === Fragment && node.key === null) { walk(node.props.children); return; }
    if (type && type.$$typeof === MEMO && type.displayName === "Foreach") { walk(type.type(node.props)); return; }
    out.push(node);
  };
  walk(children);
  return out;
}

export function MessageList({ children, firstIndex, laterCount, scrollParent, onStartReached, onEndReached, gap, ...rest }) {
  const items = rowsOf(children);
  const first = Math.max(0, firstIndex || 0);
  const [parent, setParent] = useState(null);
  const asked = useRef(-1);
  const askedLater = useRef(-1);
  const movedUp = useRef(false);
  useEffect(() => { setParent(document.getElementById(scrollParent)); }, [scrollParent]);
  const maybeLoad = useCallback(() => {
    // Only after the reader moved up (never while the page first scrolls itself to the end), once per page.
    if (!parent || !onStartReached || first <= 0 || !movedUp.current || asked.current === first) return;
    if (parent.scrollTop > parent.clientHeight * NEAR_TOP_SCREENS) return;
    asked.current = first;
    onStartReached();
  }, [parent, first, onStartReached]);
  const end = first + items.length;
  const later = laterCount || 0;
  const maybeLoadLater = useCallback(() => {
    // Once per window end: the reader reached the last row given while later rows are on the server.
    // The list's end must really be near the screen: right after rows leave the window's bottom the list
    // may report its (stale) last row as shown, which would undo the window at once.
    if (!parent || !onEndReached || later <= 0 || askedLater.current === end) return;
    const list = parent.querySelector('[data-testid=message-list]');
    if (!list) return;
    const below = list.getBoundingClientRect().bottom - parent.getBoundingClientRect().bottom;
    if (below > parent.clientHeight * NEAR_TOP_SCREENS) return;
    askedLater.current = end;
    onEndReached();
  }, [parent, end, later, onEndReached]);
  useEffect(() => {
    if (!parent) return undefined;
    let last = parent.scrollTop;
    const onScroll = () => {
      if (parent.scrollTop < last - 1) movedUp.current = true;
      last = parent.scrollTop;
      maybeLoad();
      if (later > 0) maybeLoadLater();
    };
    parent.addEventListener("scroll", onScroll, { passive: true });
    maybeLoad(); // a page that arrived while the reader stays at the top asks for the next one
    return () => parent.removeEventListener("scroll", onScroll);
  }, [parent, maybeLoad, maybeLoadLater, later]);
  const gapPx = gap === undefined ? 12 : gap;
  // Each row stacks its bubble as the thread column did (a user's bubble on the right).
  const content = useCallback((index, item) => h("div", { style: { paddingBottom: gapPx + "px", display: "flex", flexDirection: "column" } }, item), [gapPx]);
  if (!parent) return h("div", rest);
  return h(Virtuoso, {
    ...rest,
    customScrollParent: parent,
    data: items,
    firstItemIndex: first,
    initialTopMostItemIndex: Math.max(0, items.length - 1),
    itemContent: content,
    startReached: maybeLoad,
    endReached: maybeLoadLater,
    increaseViewportBy: { top: 400, bottom: 200 },
    defaultItemHeight: 80,
  });
}
