// Beleg's web page: search, ask, and check every citation against its source.
// Plain JavaScript, no build step, no network but this server.
// Retrieved text is data: it only ever reaches the page through textContent and
// createElement, never parsed as HTML, so a document that contains markup shows as text.
"use strict";

const KEY_STORE = "beleg.apiKey";   // sessionStorage: gone when the tab closes
const LANG_STORE = "beleg.lang";

const STRINGS = {
  en: {
    skip: "Skip to the question", language: "Language", signOut: "Sign out", signInTitle: "Sign in",
    signInHint: "Paste your API key. It stays in this browser tab only.", apiKey: "API key", signIn: "Sign in",
    askLabel: "Ask a question", ask: "Ask", stream: "Show the answer as it is written",
    searchLabel: "Search the documents", search: "Search", working: "Working…", answerTitle: "Answer",
    sourcesTitle: "Sources", resultsTitle: "Search results", close: "Close",
    showTrace: "Show how this answer was found", hideTrace: "Hide how this answer was found",
    signedInAs: "Signed in as {user} ({tenant})", signedIn: "Signed in",
    keyRejected: "This API key was not accepted ({message}). Check the key and sign in again.",
    quotesVerified: "Quotes verified", supported: "Supported", confidence: "Confidence", yes: "yes", no: "no",
    notAssessed: "not assessed", refused: "Refused: {reason}", refusedPlain: "Refused",
    withheld: "Not confirmed: {reason}", withheldPlain: "Not confirmed",
    byRule: "Answered by rule, no sources", problems: "Problems: {list}", why: "Why not: {list}",
    disagree: "Sources disagree on {fact}", earlier: "Earlier values of {fact}", otherVersions: "Values of {fact} in other versions",
    disagreeBare: "Sources disagree", earlierBare: "Earlier values", otherVersionsBare: "Values in other versions",
    governs: "governs", superseded: "superseded", later: "later version", contradicts: "contradicts",
    governsWhy: "Governs because: {reasons}", supersededWhy: "Superseded by version {version}",
    laterWhy: "Changed in version {version}",
    contradictsWhy: "Contradicts the governing source {label}",
    version: "version {v}", cited: "cited", notCited: "retrieved, not cited", ineligible: "not eligible: {reasons}",
    openSource: "Open the source", openQuote: "Open the quote in its document", chipLabel: "Source {label}: {title}",
    passage: "Passage", withheldWhole: "Withheld: instruction-like text (possible prompt injection)",
    withheldSpans: "{n} passage(s) withheld: instruction-like text (possible prompt injection); the rest may be used",
    withheldFields: "{fields} withheld: instruction-like text", withheldMark: "withheld",
    instructionLike: "contains instruction-like text", noHits: "No hits among the documents you may see.",
    queries: "Queries issued", steps: "Steps", llmCalls: "LLM calls", latency: "Latency", decision: "Decision",
    fullTrace: "Full trace (JSON)", none: "none", quoteMismatch: "The text at these offsets differs from the quote: the document changed since the answer.",
    docNotFound: "Document not found or not visible to you.", chars: "characters {start}–{end}",
  },
  de: {
    skip: "Zur Frage springen", language: "Sprache", signOut: "Abmelden", signInTitle: "Anmelden",
    signInHint: "API-Schlüssel einfügen. Er bleibt nur in diesem Browser-Tab.", apiKey: "API-Schlüssel",
    signIn: "Anmelden", askLabel: "Eine Frage stellen", ask: "Fragen", stream: "Antwort beim Schreiben anzeigen",
    searchLabel: "Die Dokumente durchsuchen", search: "Suchen", working: "Einen Moment…", answerTitle: "Antwort",
    sourcesTitle: "Quellen", resultsTitle: "Suchergebnisse", close: "Schließen",
    showTrace: "Zeigen, wie diese Antwort gefunden wurde", hideTrace: "Ausblenden, wie diese Antwort gefunden wurde",
    signedInAs: "Angemeldet als {user} ({tenant})", signedIn: "Angemeldet",
    keyRejected: "Dieser API-Schlüssel wurde nicht angenommen ({message}). Schlüssel prüfen und neu anmelden.",
    quotesVerified: "Zitate geprüft", supported: "Belegt", confidence: "Konfidenz", yes: "ja", no: "nein",
    notAssessed: "nicht bewertet", refused: "Abgelehnt: {reason}", refusedPlain: "Abgelehnt",
    withheld: "Nicht bestätigt: {reason}", withheldPlain: "Nicht bestätigt",
    byRule: "Per Regel beantwortet, ohne Quellen", problems: "Probleme: {list}", why: "Warum nicht: {list}",
    disagree: "Quellen widersprechen sich bei {fact}", earlier: "Frühere Werte von {fact}", otherVersions: "Werte von {fact} in anderen Versionen",
    disagreeBare: "Quellen widersprechen sich", earlierBare: "Frühere Werte", otherVersionsBare: "Werte in anderen Versionen",
    governs: "maßgeblich", superseded: "abgelöst", later: "spätere Version", contradicts: "widerspricht",
    governsWhy: "Maßgeblich, weil: {reasons}", supersededWhy: "Abgelöst durch Version {version}",
    laterWhy: "Geändert in Version {version}",
    contradictsWhy: "Widerspricht der maßgeblichen Quelle {label}",
    version: "Version {v}", cited: "zitiert", notCited: "gefunden, nicht zitiert", ineligible: "nicht zulässig: {reasons}",
    openSource: "Quelle öffnen", openQuote: "Zitat im Dokument öffnen", chipLabel: "Quelle {label}: {title}",
    passage: "Abschnitt", withheldWhole: "Zurückgehalten: anweisungsartiger Text (mögliche Prompt-Injection)",
    withheldSpans: "{n} Passage(n) zurückgehalten: anweisungsartiger Text (mögliche Prompt-Injection); der Rest darf verwendet werden",
    withheldFields: "{fields} zurückgehalten: anweisungsartiger Text", withheldMark: "zurückgehalten",
    instructionLike: "enthält anweisungsartigen Text", noHits: "Keine Treffer unter den Dokumenten, die Sie sehen dürfen.",
    queries: "Gestellte Suchanfragen", steps: "Schritte", llmCalls: "LLM-Aufrufe", latency: "Laufzeit",
    decision: "Entscheidung", fullTrace: "Vollständiger Ablauf (JSON)", none: "keine",
    quoteMismatch: "Der Text an diesen Stellen weicht vom Zitat ab: das Dokument wurde seit der Antwort geändert.",
    docNotFound: "Dokument nicht gefunden oder für Sie nicht sichtbar.", chars: "Zeichen {start}–{end}",
  },
};

const state = { lang: "en", key: null, who: null, answer: null, hits: null, traceOpen: false, opener: null };
const $ = (id) => document.getElementById(id);

function t(name, params = {}) {
  const text = STRINGS[state.lang][name] ?? STRINGS.en[name] ?? name;
  return text.replace(/\{(\w+)\}/g, (_, p) => String(params[p] ?? ""));
}

// One element with text children; strings become text nodes, never markup.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// ---------------------------------------------------------------- the API
class ApiError extends Error {
  constructor(status, type, message) { super(message); this.status = status; this.type = type; }
}

function url(path) { return new URL(path, document.baseURI).toString(); }

function headers(json) {
  const h = { Authorization: "Bearer " + state.key };
  if (json) h["Content-Type"] = "application/json";
  return h;
}

async function apiError(res) {
  let type = "http", message = res.status + " " + res.statusText;
  try {
    const body = await res.json();
    if (body && body.error) { type = body.error.type || type; message = body.error.message || message; }
  } catch (_) { /* not JSON: keep the status line */ }
  return new ApiError(res.status, type, message);
}

async function api(path, body) {
  const init = body === undefined ? { headers: headers(false) }
    : { method: "POST", headers: headers(true), body: JSON.stringify(body) };
  const res = await fetch(url(path), init);
  if (!res.ok) throw await apiError(res);
  return res.json();
}

// Server-sent events over fetch (EventSource cannot send an Authorization header).
async function askStreaming(question, onToken) {
  const res = await fetch(url("v1/ask"), {
    method: "POST", headers: { ...headers(true), Accept: "text/event-stream" },
    body: JSON.stringify({ question, stream: true }),
  });
  if (!res.ok) throw await apiError(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "", answer = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = parseEvent(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
      if (event.name === "token") onToken(event.data.text ?? "");
      else if (event.name === "answer") answer = event.data;
      else if (event.name === "error") throw new ApiError(0, event.data.error?.type, event.data.error?.message);
    }
    if (done) break;
  }
  if (!answer) throw new ApiError(0, "stream", "the stream ended without an answer");
  return answer;
}

function parseEvent(frame) {
  let name = "message"; const data = [];
  for (const line of frame.split("\n")) {
    if (line.startsWith("event:")) name = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
  }
  return { name, data: data.length ? JSON.parse(data.join("\n")) : {} };
}

// ---------------------------------------------------------------- sign-in
async function signIn(key) {
  state.key = key;
  const status = await api("v1/status");
  sessionStorage.setItem(KEY_STORE, key);
  state.who = status.principal || status.identity || {};
  renderWho();
  $("who").hidden = false;
  $("sign-out").hidden = false;
  $("sign-in").hidden = true;
  $("workspace").hidden = false;
  hideError();
  openLinkedDocument();
}

function openLinkedDocument() {
  const link = docLink();
  if (link && state.key) openDocument(link.doc, link.start, link.end);
}

function renderWho() {
  const who = state.who || {};
  $("who").textContent = who.user ? t("signedInAs", { user: who.user, tenant: who.tenant ?? "-" }) : t("signedIn");
}

function signOut() {
  if ($("doc-view").open) $("doc-view").close();
  sessionStorage.removeItem(KEY_STORE);
  state.key = null; state.who = null; state.answer = null; state.hits = null;
  // What this key was shown must not stay in the page for whoever signs in next.
  clear($("answer-text"), $("verdicts"), $("conflicts"), $("sources"), $("trace"), $("hits"));
  $("question").value = ""; $("query").value = "";
  $("workspace").hidden = true; $("answer").hidden = true; $("results").hidden = true;
  $("who").hidden = true; $("sign-out").hidden = true; $("sign-in").hidden = false;
  $("api-key").value = "";
  $("api-key").focus();
}

// ---------------------------------------------------------------- ask and search
async function ask(question) {
  $("results").hidden = true;
  $("answer").hidden = false;
  clear($("answer-text"), $("verdicts"), $("conflicts"), $("sources"), $("trace"));
  let answer;
  if ($("stream").checked) {
    // aria-busy: screen readers wait for the whole answer instead of reading every token.
    $("answer-text").setAttribute("aria-busy", "true");
    try { answer = await askStreaming(question, (text) => $("answer-text").append(text)); }
    finally { $("answer-text").removeAttribute("aria-busy"); }
  } else {
    answer = await api("v1/ask", { question });
  }
  state.answer = answer;
  renderAnswer();
}

async function search(query) {
  $("answer").hidden = true;
  const body = await api("v1/search", { query });
  state.hits = body.hits || [];
  renderHits();
}

async function run(task) {
  hideError();
  $("busy").hidden = false;
  for (const b of document.querySelectorAll("form button")) b.disabled = true;
  try { await task(); }
  catch (err) { fail(err); }
  finally {
    $("busy").hidden = true;
    for (const b of document.querySelectorAll("form button")) b.disabled = false;
  }
}

// A key the server no longer accepts (401), or one without the read scope at sign-in (403),
// signs the page out: nothing more can be shown with it.
function fail(err) {
  const rejected = err.status === 401 || (err.status === 403 && state.who === null);
  if (!rejected) { showError(err); return; }
  signOut();
  showError(new Error(t("keyRejected", { message: err.message })));
}

// ---------------------------------------------------------------- rendering the answer
function renderAnswer() {
  const a = state.answer;
  if (!a) return;
  const box = $("answer-text");
  clear(box, $("verdicts"), $("conflicts"), $("sources"));
  box.append(...answerWithChips(a));
  $("verdicts").append(...verdicts(a));
  $("conflicts").append(...(a.conflicts || []).map((c) => conflict(c, a)));
  const cited = new Set((a.citations || []).map((c) => c.label));
  $("sources").append(...(a.sources || []).map((s) => sourceItem(s, a, cited.has(s.label))));
  renderTrace();
}

// The answer text with each [S1] (or [S1, S2]) turned into a button that opens the quote.
function answerWithChips(a) {
  const parts = [];
  const pattern = /\[(S\d+(?:\s*,\s*S\d+)*)\]/g;
  let last = 0, m;
  while ((m = pattern.exec(a.answer || "")) !== null) {
    parts.push(a.answer.slice(last, m.index));
    for (const label of m[1].split(/\s*,\s*/)) parts.push(chip(label, a));
    last = m.index + m[0].length;
  }
  parts.push((a.answer || "").slice(last));
  return parts.filter((p) => p !== "");
}

function chip(label, a) {
  const source = (a.sources || []).find((s) => s.label === label);
  const citation = (a.citations || []).find((c) => c.label === label);
  const title = source ? source.title : "";
  // A label the answer names but no source carries (an LLM's slip) stays visible, and inert.
  return el("button", {
    type: "button", class: "chip", "data-label": label, "aria-label": t("chipLabel", { label, title }),
    disabled: !citation && !source, onclick: (e) => openCitationOrSource(citation, source, e.currentTarget),
  }, label);
}

function openCitationOrSource(citation, source, opener) {
  if (citation) openDocument(citation.doc_id, citation.start, citation.end, { quote: citation.quote, opener, source });
  else if (source) openDocument(source.doc_id, source.start, source.end, { opener, source });
}

function verdicts(a) {
  const items = [];
  if (a.refused) {
    const reason = a.trace && a.trace.decision;
    // Withheld: a candidate was found but not shown to answer (its closest passages are listed).
    const kind = a.withheld ? "withheld" : "refused";
    items.push(el("li", { class: "verdict bad", "data-verdict": kind }, reason ? t(kind, { reason }) : t(kind + "Plain")));
    return items;
  }
  if (a.backend === "rule") return [el("li", { class: "verdict" }, t("byRule"))];
  const yesNo = (v) => (v === null || v === undefined ? t("notAssessed") : v ? t("yes") : t("no"));
  const quotes = a.quotes_verified ?? a.verified;
  items.push(el("li", { class: "verdict " + (quotes ? "good" : "bad"), "data-verdict": "quotes" },
    t("quotesVerified") + ": " + yesNo(quotes)));
  items.push(el("li", { class: "verdict " + (a.supported ? "good" : "bad"), "data-verdict": "supported" },
    t("supported") + ": " + yesNo(a.support === null ? null : a.supported)));
  if (typeof a.confidence === "number") {
    items.push(el("li", { class: "verdict", "data-verdict": "confidence" }, t("confidence") + ": " + a.confidence.toFixed(2)));
  }
  if (a.problems && a.problems.length) items.push(el("li", { class: "verdict bad" }, t("problems", { list: a.problems.join("; ") })));
  const failed = Object.values((a.support && a.support.checks) || {}).filter((c) => c.passed === false).map((c) => c.why);
  if (!a.supported && failed.length) items.push(el("li", { class: "verdict why" }, t("why", { list: failed.join("; ") })));
  return items;
}

// One conflict: its values side by side, the governing one first and marked, each with why.
function conflict(c, a) {
  const values = [...(c.values || [])].sort((x, y) => Number(y.governs) - Number(x.governs));
  const governing = values.find((v) => v.governs);
  const contradicted = values.some((v) => !v.governs && v.relation !== "superseded" && v.relation !== "later");
  const cards = values.map((v) => {
    const source = (a.sources || []).find((s) => s.label === v.label);
    const relation = v.governs ? "governs" : ["superseded", "later"].includes(v.relation) ? v.relation : "contradicts";
    let why;
    if (v.governs) why = t("governsWhy", { reasons: governingReasons(v, source) });
    else if (relation === "superseded") why = t("supersededWhy", { version: governing ? governing.version : "-" });
    else if (relation === "later") why = t("laterWhy", { version: v.version || "-" });
    else why = t("contradictsWhy", { label: governing ? governing.label : "-" });
    return el("article", { class: "conflict-value " + relation, "data-relation": relation },
      el("p", { class: "value" }, v.value),
      el("p", { class: "relation" }, t(relation)),
      el("p", { class: "meta" }, facts({ version: v.version, status: v.status, authority: v.authority })),
      source ? el("p", { class: "meta" }, source.title) : null,
      v.contains_instructions ? el("p", { class: "withheld-note" }, t("instructionLike")) : null,
      el("blockquote", {}, v.quote),
      el("p", { class: "why" }, why),
      source ? el("button", { type: "button", class: "chip", onclick: (e) => openQuoteInSource(v.quote, source, e.currentTarget) },
        v.label) : null);
  });
  const later = values.some((v) => !v.governs && v.relation === "later");
  // "fact" is "" when the governing value has no section heading: then the title names none.
  const key = (contradicted ? "disagree" : later ? "otherVersions" : "earlier") + (c.fact ? "" : "Bare");
  const title = t(key, { fact: c.fact });
  return el("section", { class: "conflict" }, el("h3", {}, title), el("div", { class: "conflict-grid" }, cards));
}

function governingReasons(value, source) {
  if (source && source.reasons && source.reasons.length) return source.reasons.join(", ");
  return facts({ version: value.version, status: value.status, authority: value.authority });
}

// A conflict value carries its quote but not its offsets: find it inside the source's passage.
function openQuoteInSource(quote, source, opener) {
  const at = (source.text || "").indexOf(quote);
  if (at >= 0) openDocument(source.doc_id, source.start + at, source.start + at + quote.length, { quote, opener, source });
  else openDocument(source.doc_id, source.start, source.end, { opener, source });
}

function sourceItem(s, a, cited) {
  const quotes = (a.citations || []).filter((c) => c.label === s.label);
  const status = cited ? t("cited") : t("notCited");
  return el("li", { class: "source" + (cited ? " cited" : ""), "data-label": s.label },
    el("p", { class: "source-title" }, el("span", { class: "label" }, s.label), " ", s.title,
      el("span", { class: "tag" }, status)),
    el("p", { class: "meta" }, s.heading_path || ""),
    el("p", { class: "meta" }, facts({ version: s.version, status: s.status, authority: s.authority, date: s.date, language: s.language })),
    s.eligible === false ? el("p", { class: "meta" }, t("ineligible", { reasons: (s.reasons || []).join(", ") })) : null,
    withheldNotes(s).map((note) => el("p", { class: "withheld-note" }, note)),
    quotes.map((c) => el("button", { type: "button", class: "quote", "aria-label": t("openQuote"),
      onclick: (e) => openCitationOrSource(c, s, e.currentTarget) }, "“" + (c.display || c.quote) + "”")),
    el("div", { class: "row" },
      el("button", { type: "button", onclick: (e) => openDocument(s.doc_id, s.start, s.end, { opener: e.currentTarget, source: s }) },
        t("openSource"))),
    el("details", {}, el("summary", {}, t("passage")), el("p", { class: "passage" }, withWithheld(s.text || "", 0, spansOf(s, s.start)))));
}

function withheldNotes(s) {
  const w = s.withheld || {};
  const notes = [];
  if (w.whole || ((s.flags || []).length && !(w.spans || []).length && !(w.fields || []).length)) notes.push(t("withheldWhole"));
  else if ((w.spans || []).length) notes.push(t("withheldSpans", { n: w.spans.length }));
  if ((w.fields || []).length) notes.push(t("withheldFields", { fields: w.fields.join(", ") }));
  return notes;
}

// Withheld spans come in document offsets; ``base`` is where the shown text starts.
function spansOf(s, base) {
  return ((s.withheld && s.withheld.spans) || []).map(([a, b]) => [a - base, b - base]);
}

function facts(f) {
  return [f.version ? t("version", { v: f.version }) : null, f.status, f.authority, f.date, f.language]
    .filter(Boolean).join(" · ");
}

// ---------------------------------------------------------------- search results
function renderHits() {
  if (!state.hits) return;
  $("results").hidden = false;
  const list = $("hits");
  clear(list);
  if (!state.hits.length) { list.append(el("li", { class: "empty" }, t("noHits"))); return; }
  for (const h of state.hits) {
    const m = h.metadata || {};
    list.append(el("li", { class: "source hit", "data-doc": h.doc_id },
      el("p", { class: "source-title" }, h.title),
      el("p", { class: "meta" }, h.heading_path || ""),
      el("p", { class: "meta" }, facts({ version: m.version, status: m.status, authority: m.authority, date: m.date, language: m.language })),
      (h.flags || []).length ? el("p", { class: "withheld-note" }, t("instructionLike")) : null,
      el("p", { class: "passage" }, excerpt(h.text || "")),
      el("button", { type: "button", onclick: (e) => openDocument(h.doc_id, h.start, h.end, { opener: e.currentTarget }) },
        t("openSource"))));
  }
}

function excerpt(text) { return text.length > 400 ? text.slice(0, 400) + " …" : text; }

// ---------------------------------------------------------------- the trace
function renderTrace() {
  const box = $("trace");
  clear(box);
  $("trace-toggle").textContent = t(state.traceOpen ? "hideTrace" : "showTrace");
  $("trace-toggle").setAttribute("aria-expanded", String(state.traceOpen));
  box.hidden = !state.traceOpen;
  const tr = (state.answer && state.answer.trace) || {};
  const llm = tr.llm || {};
  const steps = tr.steps || (tr.strategy && tr.strategy.steps) || [];
  const latency = Object.entries(tr.latency_ms || {}).map(([k, v]) => `${k} ${v} ms`).join(" · ");
  const rows = [
    [t("queries"), el("ul", {}, (tr.queries || []).map((q) => el("li", {}, typeof q === "string" ? q : JSON.stringify(q))))],
    [t("steps"), steps.length ? el("ol", {}, steps.map((s) => el("li", {}, typeof s === "string" ? s : JSON.stringify(s)))) : t("none")],
    [t("llmCalls"), `${llm.calls ?? 0}` + (llm.tokens ? ` (${llm.tokens} tokens)` : "")],
    [t("latency"), latency || "-"],
    [t("decision"), tr.decision || "-"],
  ];
  box.append(el("dl", {}, rows.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("details", {}, el("summary", {}, t("fullTrace")), el("pre", {}, JSON.stringify(tr, null, 2))));
}

// ---------------------------------------------------------------- the document view
async function openDocument(docId, start, end, { quote = null, opener = null, source = null } = {}) {
  state.opener = opener || document.activeElement;
  hideError();
  let doc;
  try { doc = await api(`v1/documents/${encodeURIComponent(docId)}?quote=${start}:${end}`); }
  catch (err) {
    fail(err.status === 404 || err.status === 403 ? new Error(t("docNotFound")) : err);
    return;
  }
  const text = doc.text || "";
  $("doc-title").textContent = doc.title || docId;
  $("doc-meta").textContent = [facts(doc.metadata || {}), t("chars", { start, end })].filter(Boolean).join(" · ");
  // The server checks the range against the document (it may clamp it); the page highlights
  // that range and says so when its text is not the quote the answer cited.
  const range = (doc.quotes || [])[0] || { start, end, text: text.slice(start, end) };
  ({ start, end } = range);
  const shown = text.slice(start, end);
  $("doc-note").hidden = quote === null || shown === quote;
  $("doc-note").textContent = t("quoteMismatch");
  const withheld = source ? spansOf(source, 0) : [];
  const mark = el("mark", { tabindex: "-1" }, withWithheld(shown, start, withheld));
  const body = $("doc-text");
  clear(body);
  body.append(withWithheld(text.slice(0, start), 0, withheld), mark, withWithheld(text.slice(end), end, withheld));
  history.replaceState(null, "", `#doc=${encodeURIComponent(docId)}&start=${start}&end=${end}`);
  const dialog = $("doc-view");
  if (!dialog.open) dialog.showModal();
  mark.scrollIntoView({ block: "center" });
  mark.focus({ preventScroll: true });
}

// ``text`` starts at document offset ``offset``; the withheld spans (document offsets) in it are marked.
function withWithheld(text, offset, spans) {
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const [a, b] of spans) {
    const from = Math.max(a - offset, at), to = Math.min(b - offset, text.length);
    if (to <= from) continue;
    if (from > at) frag.append(text.slice(at, from));
    frag.append(el("span", { class: "withheld", title: t("withheldMark") }, text.slice(from, to)));
    at = to;
  }
  frag.append(text.slice(at));
  return frag;
}

function closeDocument() {
  history.replaceState(null, "", location.pathname + location.search);
  if (state.opener && document.contains(state.opener)) state.opener.focus();
}

// #doc=ID&start=N&end=M: a link to a passage, opened after sign-in (the key decides what is visible).
function docLink() {
  const p = new URLSearchParams(location.hash.slice(1));
  if (!p.get("doc")) return null;
  return { doc: p.get("doc"), start: Number(p.get("start") || 0), end: Number(p.get("end") || 0) };
}

// ---------------------------------------------------------------- language, errors, wiring
function setLanguage(lang) {
  state.lang = STRINGS[lang] ? lang : "en";
  localStorage.setItem(LANG_STORE, state.lang);
  document.documentElement.lang = state.lang;
  $("lang").value = state.lang;
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  renderWho();
  renderAnswer();
  renderHits();
}

function showError(err) { $("error").textContent = err.message || String(err); $("error").hidden = false; }
function hideError() { $("error").hidden = true; $("error").textContent = ""; }
function clear(...nodes) { for (const n of nodes) n.replaceChildren(); }

function onSubmit(form, handler) {
  $(form).addEventListener("submit", (e) => { e.preventDefault(); handler(); });
}

function start() {
  const stored = localStorage.getItem(LANG_STORE);
  setLanguage(stored || ((navigator.language || "en").toLowerCase().startsWith("de") ? "de" : "en"));
  $("lang").addEventListener("change", (e) => setLanguage(e.target.value));
  onSubmit("sign-in", () => run(async () => {
    await signIn($("api-key").value.trim());
    $("question").focus();
  }));
  onSubmit("ask-form", () => run(() => ask($("question").value.trim())));
  onSubmit("search-form", () => run(() => search($("query").value.trim())));
  $("sign-out").addEventListener("click", signOut);
  $("trace-toggle").addEventListener("click", () => { state.traceOpen = !state.traceOpen; renderTrace(); });
  $("doc-close").addEventListener("click", () => $("doc-view").close());
  $("doc-view").addEventListener("close", closeDocument);
  window.addEventListener("hashchange", openLinkedDocument);
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) run(() => signIn(key));
  else $("api-key").focus();
}

document.addEventListener("DOMContentLoaded", start);
