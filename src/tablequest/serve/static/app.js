// tablequest serve: the pages' only script (the CSP forbids inline script).
// Every text from the server is inserted with textContent; HTML comes only from the
// server's own escaped templates (parsed with DOMParser, never innerHTML).
"use strict";

const HEADERS = { "X-Requested-With": "tablequest" };

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function errorText(response) {
  try {
    const body = await response.json();
    if (body && body.error) return body.error.message;
  } catch (e) { /* not JSON */ }
  return response.status + " " + response.statusText;
}

async function fetchFragment(url) {
  const response = await fetch(url, { headers: HEADERS });
  if (!response.ok) throw new Error(await errorText(response));
  const doc = new DOMParser().parseFromString(await response.text(), "text/html");
  return doc;
}

function setupUpload() {
  const form = document.getElementById("upload");
  if (!form) return;
  const report = document.getElementById("upload-report");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const files = document.getElementById("upload-files").files;
    if (!files.length) { report.textContent = "Choose one or more files first."; return; }
    const data = new FormData();
    for (const file of files) data.append("files", file);
    report.className = "report";
    report.textContent = "Uploading " + files.length + " file(s)…";
    const response = await fetch("/v1/ingest", { method: "POST", body: data, headers: HEADERS });
    if (!response.ok) {
      report.className = "report error";
      report.textContent = "Upload refused: " + await errorText(response);
      return;
    }
    const body = await response.json();
    let text = body.tables_stored + " tables stored, " + body.tables_unchanged + " unchanged; " + body.tables + " tables in the store.";
    for (const failure of body.files_failed) text += "\nskipped " + failure.name + ": " + failure.reason;
    for (const warned of body.files_warned) text += "\nrepaired " + warned.name + ": " + warned.warning;
    report.textContent = text;
    await refreshCorpus();
  });
}

async function refreshCorpus() {
  const doc = await fetchFragment(location.pathname + location.search);
  for (const id of ["tables", "table-count", "pager"]) {
    const fresh = doc.getElementById(id);
    const old = document.getElementById(id);
    if (fresh && old) old.replaceWith(document.adoptNode(fresh));
  }
}

// The corpus list's Remove buttons: confirm, then DELETE /v1/tables/{id} (every index).
function setupRemove() {
  const report = document.getElementById("upload-report");
  if (!report) return;
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-remove]");
    if (!button) return;
    const name = button.dataset.name || button.dataset.remove;
    if (!window.confirm("Remove " + name + " from the store? Its rows, SQL relation and search indexes are deleted; the file itself is not.")) return;
    button.disabled = true;
    const url = "/v1/tables/" + encodeURIComponent(button.dataset.remove);
    const response = await fetch(url, { method: "DELETE", headers: HEADERS });
    if (!response.ok) {
      report.className = "report error";
      report.textContent = "Not removed: " + await errorText(response);
      button.disabled = false;
      return;
    }
    const body = await response.json();
    report.className = "report";
    report.textContent = "Removed " + name + "; " + body.tables_left + " tables in the store.";
    await refreshCorpus();
  });
}

function eventItem(view) {
  const item = el("li", "event kind-" + view.kind + (view.error ? " is-error" : ""));
  const head = el("div", "event-head");
  head.append(el("span", "t", Number(view.t || 0).toFixed(3)), el("span", "kind", view.kind), el("span", "title", view.title));
  item.append(head);
  if (view.lines && view.lines.length) {
    const list = el("ul", "lines");
    for (const line of view.lines) list.append(el("li", null, line));
    item.append(list);
  }
  const blocks = [[view.code, view.kind === "llm_call" ? "prompt" : "code"], [view.output, view.kind === "llm_call" ? "replies" : "output"]];
  for (const [text, label] of blocks) {
    if (!text) continue;
    const details = el("details");
    if (view.kind === "exec" && label === "output") details.open = true;
    details.append(el("summary", null, label), el("pre", null, text));
    item.append(details);
  }
  return item;
}

function parseOptions(text) {
  const options = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line) continue;
    const at = line.indexOf("=");
    if (at < 1) throw new Error("options: write NAME=VALUE, got " + JSON.stringify(line));
    options[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return options;
}

function setupAsk() {
  const form = document.getElementById("ask-form");
  if (!form) return;
  const params = new URLSearchParams(location.search);
  if (params.get("table_id")) document.getElementById("table-id").value = params.get("table_id");
  if (params.get("question")) document.getElementById("question").value = params.get("question");
  if (params.get("method")) document.getElementById("method").value = params.get("method");
  const select = document.getElementById("method");
  const description = document.getElementById("method-description");
  const showOptions = () => {
    for (const block of document.querySelectorAll(".method-options")) {
      block.hidden = block.dataset.method !== select.value;
      if (!block.hidden) description.textContent = block.dataset.description;
    }
  };
  select.addEventListener("change", showOptions);
  showOptions();
  const status = document.getElementById("ask-status");
  const button = document.getElementById("ask-button");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { question: document.getElementById("question").value, method: select.value };
    try {
      body.options = parseOptions(document.getElementById("options").value);
    } catch (e) { status.className = "error"; status.textContent = e.message; return; }
    const steps = document.getElementById("steps").value;
    if (steps) body.steps = Number(steps);
    const tableId = document.getElementById("table-id").value.trim();
    if (tableId) body.table_ids = [tableId];
    const conversation = document.getElementById("conversation-id").textContent;
    if (conversation && document.getElementById("follow-up").checked) {
      body.conversation_id = conversation;
    }
    document.getElementById("rewritten").hidden = true;
    status.className = "note";
    status.textContent = "Starting…";
    button.disabled = true;
    const response = await fetch("/v1/asks", {
      method: "POST", body: JSON.stringify(body),
      headers: Object.assign({ "Content-Type": "application/json" }, HEADERS),
    });
    if (!response.ok) {
      const message = await errorText(response);
      status.className = "error";
      status.textContent = "Refused: " + message;
      showRefusal(message);
      button.disabled = false;
      return;
    }
    follow(await response.json(), status, button);
  });
}

// Ask page: the conversation thread. Each answer names its conversation; the next question
// is a follow-up in it (unless unticked), and a rewritten follow-up is shown as asked.
function showThread(result) {
  if (!result.conversation_id) return;
  document.getElementById("conversation-id").textContent = result.conversation_id;
  document.getElementById("thread").hidden = false;
  document.getElementById("follow-up").checked = true;
  const rewritten = document.getElementById("rewritten");
  rewritten.textContent = result.rewritten_question ? "Asked as: " + result.rewritten_question : "";
  rewritten.hidden = !result.rewritten_question;
  showTurns(result.conversation_id);
}

// The thread: every turn of the conversation as the server keeps it (GET
// /v1/conversations/ID): the question as asked, as answered when it was rewritten, the answer.
async function showTurns(id) {
  const card = document.getElementById("thread-card");
  const list = document.getElementById("thread-turns");
  const count = document.getElementById("thread-count");
  card.hidden = false;
  let body;
  try {
    const response = await fetch("/v1/conversations/" + encodeURIComponent(id), { headers: HEADERS });
    if (!response.ok) throw new Error(await errorText(response));
    body = await response.json();
  } catch (e) {
    list.replaceChildren(el("li", "error", "The conversation could not be shown: " + e.message));
    return;
  }
  list.replaceChildren();
  for (const turn of body.turns) {
    const item = el("li", "turn");
    item.dataset.status = turn.status;
    item.append(el("p", "turn-question", turn.question));
    if (turn.standalone && turn.standalone !== turn.question) {
      item.append(el("p", "turn-rewritten note", "asked as: " + turn.standalone));
    }
    const answer = turn.answer === null || turn.answer === undefined ? "(not answered: " + turn.status + ")" : turn.answer;
    item.append(el("p", "turn-answer", answer));
    list.append(item);
  }
  count.textContent = body.turns.length + (body.turns.length === 1 ? " question" : " questions");
}

function showRefusal(message, title = "The ask was refused") {
  const answer = document.getElementById("answer");
  const card = el("section", "card result status-failed");
  card.id = "refusal";
  card.append(el("h2", null, title), el("p", "reason", message));
  answer.replaceChildren(card);
  document.getElementById("trajectory-card").hidden = true;
}

const ENDINGS = {
  answered: ["note", "Answered."],
  insufficient: ["warn", "Not enough evidence to answer"],
  failed: ["error", "Failed"],
};

function ending(result) {
  const [cls, text] = ENDINGS[result.status] || ["note", "Finished: " + result.status];
  const reason = result.status !== "answered" && result.reason ? ": " + result.reason : (result.status === "answered" ? "" : ".");
  return [cls, text + reason];
}

function follow(started, status, button) {
  const card = document.getElementById("trajectory-card");
  const list = document.getElementById("trajectory");
  const answer = document.getElementById("answer");
  const details = document.getElementById("trajectory-details");
  const count = document.getElementById("trajectory-count");
  list.replaceChildren();
  answer.replaceChildren();
  card.hidden = false;
  details.open = true;
  count.textContent = "";
  const link = document.getElementById("trace-link");
  link.replaceChildren();
  if (started.trace_id) {
    const a = el("a", null, "trace " + started.trace_id);
    a.href = "/traces/" + encodeURIComponent(started.trace_id);
    link.append(a);
  }
  status.textContent = "Running…";
  const source = new EventSource(started.events + "?view=1");
  source.addEventListener("trace", (event) => {
    const data = JSON.parse(event.data);
    list.append(eventItem(data.view));
    status.textContent = "Running… " + list.children.length + " events";
    count.textContent = list.children.length + " events";
  });
  source.addEventListener("result", async (event) => {
    source.close();
    const result = JSON.parse(event.data);
    showThread(result);
    const [cls, text] = ending(result);
    status.className = cls;
    status.textContent = text;
    button.disabled = false;
    try {
      const doc = await fetchFragment("/asks/" + encodeURIComponent(started.id) + "/result");
      for (const node of Array.from(doc.body.children)) answer.append(document.adoptNode(node));
      details.open = false;
    } catch (e) { status.className = "error"; status.textContent = "The answer could not be shown: " + e.message; }
  });
  source.addEventListener("error", (event) => {
    if (event.data) {
      source.close();
      const message = (JSON.parse(event.data).error || {}).message || "unknown error";
      status.className = "error";
      status.textContent = "Failed: " + message;
      showRefusal(message, "The ask failed");
      card.hidden = false;
      button.disabled = false;
    }
  });
}

// Table page: a click (or Enter) on a column's header opens the page sorted by it; the
// address comes from the server (data-sort-href), so the page works without script too
// (the "Sort by" field).
function setupSorting() {
  for (const th of document.querySelectorAll("th[data-sort-href]")) {
    const go = () => { location.href = th.dataset.sortHref; };
    th.addEventListener("click", go);
    th.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") { event.preventDefault(); go(); }
    });
  }
}

// Search page: which retrievers can run depends on the encoder (the server builds each
// from its registry), so choosing another encoder loads the form for it (and searches
// again when there is a question).
function setupSearch() {
  const encoder = document.getElementById("search-encoder");
  if (!encoder) return;
  encoder.addEventListener("change", () => {
    location.href = "/search?" + new URLSearchParams(new FormData(encoder.form)).toString();
  });
}

// SQL page: Ctrl+Enter (Cmd+Enter) runs the query.
function setupSql() {
  const box = document.getElementById("sql-q");
  if (!box) return;
  box.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      box.form.requestSubmit();
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  setupUpload(); setupRemove(); setupAsk(); setupSorting(); setupSql(); setupSearch();
});
