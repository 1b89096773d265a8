// The library page's script (served as /assets/library.js; the page works without it, but
// for uploading): the upload box, and the members' processing state kept current.
//
// Uploads go through tus-js-client (/assets/tus.min.js) to the page's tus endpoint, as the
// signed-in person: the session cookie, and its CSRF token in X-CSRF-Token. Each file gets
// a progress bar and a Pause/Resume button. An upload cut short (a dropped connection, a
// closed or reloaded page) goes on where it stopped when the same file is chosen again:
// tus-js-client keeps each upload's address in localStorage until it is done.
//
// While a member is uploading, queued or processing, the members' list is fetched again
// every few seconds and replaced, so progress moves and stills appear without a reload.
(function () {
  "use strict";

  var POLL_MS = 2000;
  var CHUNK = 8 * 1024 * 1024;

  var members = document.getElementById("members");
  var polling = false;
  // Uploads of this page running now (the list is kept current until they are done).
  var active = 0;

  function busy() {
    return members && members.querySelector(".state-uploading, .state-queued, .state-processing");
  }

  // Fetches this page again and puts its members' list in place of ours.
  function refresh() {
    return fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("members");
        if (fresh && members) members.innerHTML = fresh.innerHTML;
      });
  }

  function poll() {
    if (polling) return;
    polling = true;
    var tick = function () {
      refresh()
        .catch(function () { /* the next tick tries again */ })
        .then(function () {
          if (busy() || active > 0) {
            setTimeout(tick, POLL_MS);
          } else {
            polling = false;
          }
        });
    };
    setTimeout(tick, POLL_MS);
  }

  if (busy()) poll();

  var box = document.querySelector("section.upload[data-endpoint]");
  if (!box || !window.tus || !window.tus.isSupported) return;
  var endpoint = new URL(box.getAttribute("data-endpoint"), location.href).href;
  var csrf = box.getAttribute("data-csrf");
  var drop = box.querySelector(".drop");
  var input = box.querySelector("input[type=file]");
  var list = box.querySelector("ul.uploads");
  drop.hidden = false;

  function size(n) {
    var units = ["bytes", "KB", "MB", "GB", "TB"];
    var i = 0;
    while (n >= 1000 && i < units.length - 1) {
      n /= 1000;
      i++;
    }
    return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
  }

  function element(tag, className, text) {
    var e = document.createElement(tag);
    if (className) e.className = className;
    if (text) e.textContent = text;
    return e;
  }

  function add(file) {
    var item = element("li");
    var name = element("div", "name", file.name);
    var bar = element("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", "Upload of " + file.name);
    var row = element("div", "row");
    var status = element("span", "status", "Starting…");
    status.setAttribute("role", "status");
    var button = element("button", "quiet", "Pause");
    button.type = "button";
    button.setAttribute("aria-label", "Pause the upload of " + file.name);
    row.appendChild(status);
    row.appendChild(button);
    item.appendChild(name);
    item.appendChild(bar);
    item.appendChild(row);
    list.appendChild(item);

    var running = false;
    var finished = false;
    function setRunning(on) {
      if (on === running) return;
      running = on;
      active += on ? 1 : -1;
    }
    var upload = new window.tus.Upload(file, {
      endpoint: endpoint,
      chunkSize: CHUNK,
      retryDelays: [0, 1000, 3000, 5000, 10000, 20000],
      headers: { "X-CSRF-Token": csrf },
      metadata: { filename: file.name, filetype: file.type || "application/octet-stream" },
      removeFingerprintOnSuccess: true,
      onProgress: function (sent, total) {
        var pct = total ? Math.floor((sent / total) * 100) : 0;
        bar.value = pct;
        status.textContent = pct + " % · " + size(sent) + " of " + size(total);
      },
      onSuccess: function () {
        finished = true;
        setRunning(false);
        bar.value = 100;
        status.textContent = "Uploaded · " + size(file.size) + "; processing follows below";
        button.remove();
        refresh().then(poll, poll);
      },
      onError: function (error) {
        setRunning(false);
        var answer = error && error.originalResponse;
        var message = "";
        if (answer) {
          try {
            message = JSON.parse(answer.getBody()).message || "";
          } catch (e) {
            message = "";
          }
        }
        status.textContent = "Stopped: " + (message || (error && error.message) || "the upload failed");
        status.classList.add("failed");
        button.textContent = "Try again";
        button.setAttribute("aria-label", "Try the upload of " + file.name + " again");
      },
    });

    function start() {
      status.classList.remove("failed");
      button.textContent = "Pause";
      button.setAttribute("aria-label", "Pause the upload of " + file.name);
      setRunning(true);
      upload.start();
    }

    button.addEventListener("click", function () {
      if (finished) return;
      if (running) {
        upload.abort();
        setRunning(false);
        status.textContent = "Paused at " + bar.value + " %";
        button.textContent = "Resume";
        button.setAttribute("aria-label", "Resume the upload of " + file.name);
      } else {
        start();
      }
    });

    upload
      .findPreviousUploads()
      .then(function (previous) {
        if (previous.length > 0) {
          upload.resumeFromPreviousUpload(previous[0]);
          status.textContent = "Resuming where it stopped…";
        }
        start();
      })
      .catch(start);
  }

  function addAll(files) {
    for (var i = 0; i < files.length; i++) add(files[i]);
  }

  input.addEventListener("change", function () {
    addAll(input.files);
    input.value = "";
  });
  drop.addEventListener("dragover", function (e) {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", function () {
    drop.classList.remove("over");
  });
  drop.addEventListener("drop", function (e) {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer && e.dataTransfer.files) addAll(e.dataTransfer.files);
  });
})();
