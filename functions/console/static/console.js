// The console's only script: live task progress over the console's relay of the task's event
// stream, a progress indicator while a dataset downloads, and confirmation before deleting.
// Everything works without it except the live view, which then needs a reload.
"use strict";

function watchTask(box) {
  const id = box.dataset.task;
  const final = ["completed", "succeeded", "failed", "cancelled", "stopped"];
  if (final.includes(box.dataset.status)) return;
  const status = document.getElementById("status");
  const bar = document.getElementById("progress");
  const text = document.getElementById("progress-text");
  const log = document.getElementById("log");
  const source = new EventSource("/tasks/" + encodeURIComponent(id) + "/events");
  const show = (data) => {
    if (data.status) {
      status.textContent = data.status;
      status.className = "status s-" + data.status;
    }
    if (typeof data.progress_percent === "number") {
      bar.value = data.progress_percent;
      text.textContent = Math.round(data.progress_percent) + "% " + (data.progress_message || "");
    }
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
    // The result, its summary and the report are rendered by the server: reload to show them.
    box.dataset.status = "final";
    window.location.reload();
  });
  // EventSource reconnects by itself with Last-Event-ID; nothing to do on a transient error.
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
  document.querySelectorAll("form[data-progress]").forEach(downloadProgress);
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (e) => {
      if (!window.confirm(form.dataset.confirm)) e.preventDefault();
    });
  });
});
