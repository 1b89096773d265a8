// medialib's player API, for the page that frames a player (Warpwire's Player API shape):
// the player posts its events to the embedding page and takes play, pause and seek from it.
// On the landing page it also adds a Copy button to each share field. Loaded from this
// service by the player pages (CSP default-src 'self'); the pages work without it.
(function () {
  "use strict";
  var media = document.querySelector("video, audio");
  var embedder = window.parent !== window ? window.parent : null;

  // Events: {source: "medialib", event, currentTime, duration} to the embedding page.
  function post(event) {
    if (!embedder || !media) return;
    embedder.postMessage({
      source: "medialib",
      event: event,
      currentTime: media.currentTime,
      duration: isFinite(media.duration) ? media.duration : null,
    }, "*");
  }
  if (media) {
    ["play", "pause", "ended"].forEach(function (name) {
      media.addEventListener(name, function () { post(name); });
    });
    var last = -1;
    media.addEventListener("timeupdate", function () {
      if (Math.abs(media.currentTime - last) >= 0.25) {
        last = media.currentTime;
        post("timeupdate");
      }
    });
    if (media.readyState >= 1) {
      post("ready");
    } else {
      media.addEventListener("loadedmetadata", function () { post("ready"); }, { once: true });
    }
  }

  // Commands: {target: "medialib", method: "play" | "pause" | "seek", value: seconds}.
  window.addEventListener("message", function (e) {
    var d = e.data;
    if (!media || !d || d.target !== "medialib") return;
    if (d.method === "play") {
      media.play().catch(function () {});
    } else if (d.method === "pause") {
      media.pause();
    } else if (d.method === "seek" && typeof d.value === "number" && isFinite(d.value) && d.value >= 0) {
      media.currentTime = d.value;
    }
  });

  // Copy buttons on the share fields, where the browser offers the clipboard.
  if (navigator.clipboard) {
    document.querySelectorAll(".share .field").forEach(function (field) {
      var input = field.querySelector("input, textarea");
      var label = field.querySelector("label");
      if (!input || !label) return;
      var button = document.createElement("button");
      button.type = "button";
      button.className = "quiet";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy: " + label.textContent);
      button.addEventListener("click", function () {
        navigator.clipboard.writeText(input.value).then(function () {
          button.textContent = "Copied";
        });
      });
      field.appendChild(button);
    });
  }
})();
