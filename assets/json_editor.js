// JSON editor for a tool call's arguments: CodeMirror 6 with JSON highlighting, bracket matching,
// and the problems against the tool's JSON schema shown inline at their line as you type.
// Wrapped for Reflex by hitl_app/ui/components/json_editor.py. Plain JS (no JSX) on purpose.
//
// Props: value (text from the server), schema (JSON schema object or null), onChange(text)
// (debounced by debounceMs, flushed on blur), onSettle() (once typing has paused settleMs, and on
// blur after onChange: e.g. "keep the draft now"), ariaLabel, readOnly; other props (data-testid, id)
// go on the wrapper <div>. Esc leaves the editor (Tab moves focus on as well: no tab trap).
import { createElement as h, useCallback, useEffect, useMemo, useRef, useState } from "react";
import CodeMirror from "@uiw/react-codemirror";
import { json, jsonParseLinter } from "@codemirror/lang-json";
import { syntaxTree } from "@codemirror/language";
import { forEachDiagnostic, linter, lintGutter, setDiagnosticsEffect } from "@codemirror/lint";
import { Prec } from "@codemirror/state";
import { Decoration, EditorView, ViewPlugin, WidgetType, keymap } from "@codemirror/view";
import { Validator } from "@cfworker/json-schema";

const VALUE_NODES = new Set(["Object", "Array", "String", "Number", "True", "False", "Null"]);
// A JSON schema "pattern" is ECMA-262 without flags; the validator compiles it with the "u" flag,
// which refuses needless escapes such as \" (Python's re writes them). Drop those escapes.
const NEEDLESS_ESCAPE = /\\([^\w\s\\\-\][(){}.*+?^$|/])/g;

function cleanSchema(node) {
  if (Array.isArray(node)) return node.map(cleanSchema);
  if (!node || typeof node !== "object") return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === "pattern" && typeof value === "string") {
      const fixed = value.replace(NEEDLESS_ESCAPE, "$1");
      try { new RegExp(fixed, "u"); out[key] = fixed; } catch (e) { /* unusable: the server checks it */ }
    } else {
      out[key] = cleanSchema(value);
    }
  }
  return out;
}

function valueChildren(node) {
  const out = [];
  for (let c = node.firstChild; c; c = c.nextSibling) if (VALUE_NODES.has(c.name)) out.push(c);
  return out;
}

// The syntax node of the value at a JSON pointer ("#/items/0/qty"), or the deepest one found.
function locate(state, pointer) {
  let node = valueChildren(syntaxTree(state).topNode)[0];
  const segments = pointer.replace(/^#/, "").split("/").slice(1)
    .map((s) => decodeURIComponent(s).replace(/~1/g, "/").replace(/~0/g, "~"));
  for (const seg of segments) {
    if (!node) return null;
    let next = null;
    if (node.name === "Object") {
      for (let p = node.firstChild; p && !next; p = p.nextSibling) {
        const key = p.name === "Property" ? p.getChild("PropertyName") : null;
        let name = null;
        try { name = key ? JSON.parse(state.sliceDoc(key.from, key.to)) : null; } catch (e) { name = null; }
        if (name === seg) next = valueChildren(p)[0] || key;
      }
    } else if (node.name === "Array") {
      next = valueChildren(node)[Number(seg)] || null;
    }
    if (!next) return node;
    node = next;
  }
  return node;
}

function friendly(err) {
  const msg = err.error;
  const path = err.instanceLocation.replace(/^#\/?/, "").split("/").filter(Boolean).join(".");
  const where = path ? `${path}: ` : "";
  let m;
  if ((m = /Expected "(.+)"\.$/.exec(msg)) && err.keyword === "type") return `${where}must be ${m[1].replace(/", "/g, " or ")}`;
  if ((m = /required property "(.+)"/.exec(msg))) return `${where}missing required "${m[1]}"`;
  if ((m = /any of (.+)\.$/.exec(msg)) && err.keyword === "enum") return `${where}must be one of ${JSON.parse(m[1]).join(", ")}`;
  if (err.keyword === "pattern") return `${where}has the wrong format`;
  return where + msg;
}

// Keep the innermost, most specific error per location (drop "a subschema had errors" summaries).
function pickErrors(errors) {
  const summary = new Set(["properties", "items", "prefixItems", "$ref", "allOf", "anyOf", "oneOf", "additionalProperties"]);
  const specific = errors.filter((e) => !summary.has(e.keyword));
  const seen = new Set();
  return (specific.length ? specific : errors).filter((e) => {
    if (seen.has(e.instanceLocation)) return false;
    seen.add(e.instanceLocation);
    return true;
  });
}

function schemaLinter(schema) {
  const syntax = jsonParseLinter();
  let validator = null;
  try {
    if (schema && typeof schema === "object" && Object.keys(schema).length) validator = new Validator(cleanSchema(schema), "2020-12", false);
  } catch (e) { validator = null; }
  return (view) => {
    const text = view.state.doc.toString();
    if (!text.trim()) return [{ from: 0, to: 0, severity: "error", message: "enter the arguments as a JSON object" }];
    const broken = syntax(view);
    // "Unexpected token ... in JSON at position 30 (line 3 column 3)": the place is shown already.
    if (broken.length) return broken.map((d) => ({ ...d, message: d.message.replace(/ in JSON at position \d+.*$/, "") }));
    if (!validator) return [];
    let result;
    try { result = validator.validate(JSON.parse(text)); } catch (e) { return []; }
    if (result.valid) return [];
    return pickErrors(result.errors).map((err) => {
      const node = locate(view.state, err.instanceLocation);
      const whole = err.keyword === "required" && node;
      return {
        from: node ? node.from : 0,
        to: node ? (whole ? node.from + 1 : node.to) : 0,
        severity: "error",
        message: friendly(err),
      };
    });
  };
}

class ErrorWidget extends WidgetType {
  constructor(message, line) { super(); this.message = message; this.line = line; }
  eq(other) { return other.message === this.message && other.line === this.line; }
  toDOM() {
    const el = document.createElement("span");
    el.className = "cm-inline-error";
    el.setAttribute("data-testid", "edit-json-error");
    el.setAttribute("data-line", String(this.line));
    el.textContent = this.message;
    return el;
  }
  ignoreEvent() { return true; }
}

function lineProblems(state) {
  const byLine = new Map();
  forEachDiagnostic(state, (d, from) => {
    const line = state.doc.lineAt(Math.min(from, state.doc.length));
    if (!byLine.has(line.number)) byLine.set(line.number, { end: line.to, messages: [] });
    byLine.get(line.number).messages.push(d.message);
  });
  return [...byLine.entries()].sort((a, b) => a[0] - b[0]);
}

// Each problem's message written after the end of its line (not only on hover).
const inlineErrors = ViewPlugin.fromClass(class {
  constructor(view) { this.decorations = this.build(view.state); }
  update(u) {
    if (u.docChanged || u.transactions.some((t) => t.effects.some((e) => e.is(setDiagnosticsEffect)))) this.decorations = this.build(u.state);
  }
  build(state) {
    return Decoration.set(lineProblems(state).map(([line, p]) =>
      Decoration.widget({ widget: new ErrorWidget(p.messages.join("; "), line), side: 1 }).range(p.end)));
  }
}, { decorations: (v) => v.decorations });

const theme = EditorView.baseTheme({
  "&": { fontSize: "13px", border: "1px solid var(--gray-a7, #ccc)", borderRadius: "6px" },
  "&.cm-focused": { outline: "2px solid var(--accent-8, #3e63dd)", outlineOffset: "1px" },
  ".cm-inline-error": { color: "var(--red-11, #c62828)", marginLeft: "1.5em", fontStyle: "italic", fontSize: "0.9em" },
});

const leaveOnEscape = Prec.highest(keymap.of([{ key: "Escape", run: (view) => { view.contentDOM.blur(); return true; } }]));

export function JsonEditor({ value, schema, onChange, onSettle, debounceMs = 300, settleMs = 800, ariaLabel = "Arguments (JSON)", readOnly = false, maxLength = 0, ...rest }) {
  const [text, setText] = useState(value ?? "");
  const [problems, setProblems] = useState([]);
  const focused = useRef(false);
  const timer = useRef(null);
  const pending = useRef(null);
  const send = useRef(onChange);
  send.current = onChange;
  const settleTimer = useRef(null);
  const settle = useRef(onSettle);
  settle.current = onSettle;

  const flush = useCallback(() => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = null;
    if (pending.current !== null) {
      const t = pending.current;
      pending.current = null;
      // at most maxLength characters go to the server (the socket's message limit; the server
      // then says the text is too large, as it does for any text over its own, lower limit)
      if (send.current) send.current(maxLength > 0 && t.length > maxLength ? t.slice(0, maxLength) : t);
    }
  }, []);
  // After flush: the settled text went first, then the editor says typing has settled.
  const settled = useCallback(() => {
    if (settleTimer.current === null) return;
    clearTimeout(settleTimer.current);
    settleTimer.current = null;
    flush();
    if (settle.current) settle.current();
  }, [flush]);
  useEffect(() => () => { flush(); settled(); }, [flush, settled]);
  // The server's text wins unless the person is typing here (their newer text is on its way).
  useEffect(() => {
    if (!focused.current && pending.current === null && typeof value === "string") setText(value);
  }, [value]);

  const schemaKey = JSON.stringify(schema ?? null);
  const extensions = useMemo(() => [
    json(), lintGutter(), linter(schemaLinter(schema), { delay: 250 }), inlineErrors, theme, leaveOnEscape,
    EditorView.lineWrapping,
    EditorView.contentAttributes.of({ "aria-label": ariaLabel }),
    EditorView.updateListener.of((u) => {
      if (u.transactions.some((t) => t.effects.some((e) => e.is(setDiagnosticsEffect)))) {
        setProblems(lineProblems(u.state).map(([line, p]) => `line ${line}: ${p.messages.join("; ")}`));
      }
    }),
  ], [schemaKey, ariaLabel]); // eslint-disable-line react-hooks/exhaustive-deps

  const changed = useCallback((next) => {
    setText(next);
    pending.current = next;
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(flush, debounceMs);
    if (settleTimer.current) clearTimeout(settleTimer.current);
    settleTimer.current = setTimeout(settled, settleMs);
  }, [flush, settled, debounceMs, settleMs]);

  // data-synced: "true" once the server's copy (value) is the text shown here (typed text goes
  // 300 ms after a pause, or on blur); a test clicks "Check edit" once the diff has followed.
  return h("div", { ...rest, "data-problems": String(problems.length), "data-synced": String(value === text) },
    h(CodeMirror, {
      value: text, extensions, onChange: changed, readOnly, indentWithTab: false, minHeight: "8rem", maxHeight: "24rem",
      basicSetup: { foldGutter: false, autocompletion: false, highlightActiveLine: false },
      onFocus: () => { focused.current = true; },
      onBlur: () => { focused.current = false; flush(); settled(); },
    }),
    h("div", { "aria-live": "polite", "data-testid": "edit-json-status", style: { fontSize: "12px", marginTop: "4px", color: problems.length ? "var(--red-11, #c62828)" : "var(--gray-11, #666)" } },
      problems.length ? `${problems.length} problem${problems.length > 1 ? "s" : ""}: ${problems.join(" · ")}` : "JSON is valid"),
  );
}
