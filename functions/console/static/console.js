// The console's only script: live task and benchmark-run progress over the console's relay of
// their event streams, a progress indicator while a dataset downloads, and confirmation before
// deleting. Everything works without it except the live views, which then refresh the page.
"use strict";

// follow relays a record's event stream into its page: status and progress on every event
// (more, when given, shows the rest), log lines into the log, and a reload once the stream
// ends, because the server renders the result.
function follow(box, url, statusId, more) {
  const status = document.getElementById(statusId);
  const bar = document.getElementById("progress");
  const text = document.getElementById("progress-text");
  const log = document.getElementById("log");
  const source = new EventSource(url);
  const show = (data) => {
    if (data.status) {
      status.textContent = data.status;
      status.className = "status s-" + data.status;
    }
    if (typeof data.progress_percent === "number") {
      bar.value = data.progress_percent;
      text.textContent = Math.round(data.progress_percent) + "% " + (data.progress_message || "");
    }
    if (more) more(data);
  };
  source.addEventListener("status", (e) => show(JSON.parse(e.data)));
  source.addEventListener("log", (e) => {
    log.hidden = false;
    log.textContent += JSON.parse(e.data).line + "\n";
    log.scrollTop = log.scrollHeight;
  });
  source.addEventListener("end", (e) => {
    show(JSON.parse(e.data));
    source.close();
    box.dataset.status = "final";
    window.location.reload();
  });
  // EventSource reconnects by itself with Last-Event-ID; nothing to do on a transient error.
}

function watchTask(box) {
  const final = ["completed", "succeeded", "failed", "cancelled", "stopped"];
  if (final.includes(box.dataset.status)) return;
  follow(box, "/tasks/" + encodeURIComponent(box.dataset.task) + "/events", "status");
}

// lookup reads a dotted path out of an event's JSON.
function lookup(obj, path) {
  return path.split(".").reduce((v, k) => (v && typeof v === "object" ? v[k] : undefined), obj);
}

function formatLive(value, format) {
  if (typeof value !== "number") return value === undefined || value === null ? "" : String(value);
  if (format === "percent") return (value * 100).toFixed(1) + "%";
  // As the server renders numbers (runtime/report.Num).
  if (Number.isInteger(value)) return String(value);
  return value.toFixed(Math.abs(value) >= 100 ? 1 : 3);
}

// showLive writes a run's live_metrics into the cells that name their path (data-live) and
// lists the top error causes.
function showLive(live) {
  document.querySelectorAll("[data-live]").forEach((cell) => {
    cell.textContent = formatLive(lookup(live, cell.dataset.live), cell.dataset.format);
  });
  const errors = document.getElementById("live-errors");
  const top = lookup(live, "summary.top_errors");
  if (!errors || !Array.isArray(top)) return;
  errors.replaceChildren(...(top.length ? top.map((e) => {
    const li = document.createElement("li");
    li.textContent = e.count + " × " + e.cause;
    return li;
  }) : [Object.assign(document.createElement("li"), { className: "empty", textContent: "none" })]));
}

function watchRun(box) {
  const final = ["succeeded", "failed", "cancelled"];
  if (final.includes(box.dataset.status)) return;
  const phase = document.getElementById("run-phase");
  follow(box, "/runs/" + encodeURIComponent(box.dataset.run) + "/events", "run-status", (data) => {
    if (data.phase) phase.textContent = data.phase;
    if (data.live_metrics) showLive(data.live_metrics);
  });
}

function downloadProgress(form) {
  form.addEventListener("submit", () => {
    const bar = form.querySelector("progress");
    const elapsed = form.querySelector(".elapsed");
    const started = Date.now();
    bar.hidden = false;
    form.querySelector("button").disabled = true;
    setInterval(() => {
      elapsed.textContent = "downloading… " + Math.round((Date.now() - started) / 1000) + " s";
    }, 500);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  // The report frame is loaded from here so that it can say when it has (the browser tests
  // wait for it).
  const report = document.getElementById("report");
  if (report) {
    report.addEventListener("load", () => { report.dataset.loaded = "true"; });
    report.src = report.dataset.src;
  }
  const box = document.getElementById("task");
  if (box) watchTask(box);
  const run = document.getElementById("run");
  if (run) watchRun(run);
  document.querySelectorAll("form[data-progress]").forEach(downloadProgress);
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (e) => {
      if (!window.confirm(form.dataset.confirm)) e.preventDefault();
    });
  });
});
