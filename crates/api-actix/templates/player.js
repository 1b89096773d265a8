// The player pages' script. Where the page asks for controls it dresses the media element
// in Plyr's (loaded before this script, from this service): the seek bar previews the
// WebVTT thumbnail track (`data-thumbnails`) on hover, the captions menu lists the caption
// tracks (shown from the start with `data-captions="on"`, cc_load_policy=1), and keys work.
// An audio recording's waveform peaks (`data-waveform`) are drawn as a second seek bar.
// It is also medialib's player API, for the page that frames a player (Warpwire's Player
// API shape): the player posts its events to the embedding page and takes play, pause and
// seek from it. On the landing page it adds a Copy button to each share field. Loaded from
// this service by the player pages (CSP default-src 'self'); the pages work without it.
(function () {
  "use strict";
  var media = document.querySelector("video, audio");
  var embedder = window.parent !== window ? window.parent : null;

  if (media && media.controls && typeof window.Plyr === "function") {
    var thumbnails = media.getAttribute("data-thumbnails");
    var player = new window.Plyr(media, {
      // Everything from this service: no CDN for the icons, no blank video to fetch.
      iconUrl: "/assets/plyr.svg",
      blankVideo: "",
      controls: ["play-large", "play", "progress", "current-time", "duration", "mute",
        "volume", "captions", "settings", "pip", "fullscreen"],
      settings: ["captions", "speed"],
      captions: { active: media.getAttribute("data-captions") === "on", update: false },
      previewThumbnails: { enabled: !!thumbnails, src: thumbnails || "" },
      // The player remembers no volume or caption choice in the browser's storage.
      storage: { enabled: false },
      keyboard: { focused: true, global: false },
      tooltips: { controls: true, seek: true },
      fullscreen: { iosNative: true },
    });
    // The seek bar's previews are pictures of the time its tooltip states: decorative, so
    // each gets an empty alt as Plyr adds it.
    if (window.MutationObserver && player.elements && player.elements.container) {
      new MutationObserver(function () {
        player.elements.container.querySelectorAll(".plyr__preview-thumb img:not([alt])").forEach(function (img) {
          img.alt = "";
        });
      }).observe(player.elements.container, { childList: true, subtree: true });
    }
  }

  var peaks = media && media.getAttribute("data-waveform");
  if (peaks && window.fetch && window.HTMLCanvasElement) {
    fetch(peaks).then(function (r) {
      if (!r.ok) throw new Error("waveform " + r.status);
      return r.json();
    }).then(function (w) { drawWaveform(media, w); }).catch(function () {});
  }

  // The waveform (BBC audiowaveform JSON: min,max pairs) as a canvas that shows what has
  // played and seeks where it is clicked, or with the arrow keys (a slider to assistive
  // technology). It takes the place of the waveform picture.
  function drawWaveform(audio, w) {
    var data = Array.isArray(w && w.data) ? w.data : [];
    if (data.length < 2) return;
    // Drawn to the loudest peak, so that a quiet recording still shows its shape.
    var full = 1;
    for (var k = 0; k < data.length; k++) full = Math.max(full, Math.abs(data[k]));
    var canvas = document.createElement("canvas");
    canvas.className = "waveform";
    canvas.tabIndex = 0;
    canvas.setAttribute("role", "slider");
    canvas.setAttribute("aria-label", "Waveform: seek");
    canvas.setAttribute("aria-valuemin", "0");
    var picture = document.querySelector(".waveform-picture");
    var container = audio.closest(".plyr") || audio;
    container.parentNode.insertBefore(canvas, container);
    if (picture) picture.hidden = true;
    var colours = getComputedStyle(canvas);
    var playedColour = colours.getPropertyValue("--played").trim() || "#1a5fb4";
    var unplayedColour = colours.getPropertyValue("--unplayed").trim() || "#555";
    function duration() { return isFinite(audio.duration) ? audio.duration : 0; }
    function clock(t) {
      var s = Math.floor(t);
      return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
    }
    function paint() {
      var ratio = window.devicePixelRatio || 1;
      var width = Math.max(1, Math.round(canvas.clientWidth * ratio));
      var height = Math.max(1, Math.round(canvas.clientHeight * ratio));
      if (canvas.width !== width || canvas.height !== height) {
        canvas.width = width;
        canvas.height = height;
      }
      var g = canvas.getContext("2d");
      g.clearRect(0, 0, width, height);
      var points = data.length / 2;
      var played = duration() ? audio.currentTime / duration() : 0;
      var mid = height / 2;
      for (var x = 0; x < width; x++) {
        var from = Math.floor(x * points / width);
        var to = Math.max(from + 1, Math.floor((x + 1) * points / width));
        var lo = 0, hi = 0;
        for (var i = from; i < to && i < points; i++) {
          lo = Math.min(lo, data[2 * i]);
          hi = Math.max(hi, data[2 * i + 1]);
        }
        g.fillStyle = x / width < played ? playedColour : unplayedColour;
        var top = mid - (hi / full) * mid;
        g.fillRect(x, top, 1, Math.max(1, ((hi - lo) / full) * mid));
      }
      canvas.setAttribute("aria-valuemax", String(Math.round(duration())));
      canvas.setAttribute("aria-valuenow", String(Math.round(audio.currentTime)));
      canvas.setAttribute("aria-valuetext", clock(audio.currentTime) + " of " + clock(duration()));
    }
    function seek(t) {
      if (!duration()) return;
      audio.currentTime = Math.min(Math.max(t, 0), duration());
      paint();
    }
    canvas.addEventListener("click", function (e) {
      var box = canvas.getBoundingClientRect();
      seek(((e.clientX - box.left) / box.width) * duration());
    });
    canvas.addEventListener("keydown", function (e) {
      var step = { ArrowLeft: -5, ArrowDown: -5, ArrowRight: 5, ArrowUp: 5, PageDown: -30, PageUp: 30 }[e.key];
      if (e.key === "Home") step = -Infinity;
      if (e.key === "End") step = Infinity;
      if (step === undefined) return;
      e.preventDefault();
      seek(isFinite(step) ? audio.currentTime + step : (step < 0 ? 0 : duration()));
    });
    ["timeupdate", "loadedmetadata", "seeked", "ended"].forEach(function (name) {
      audio.addEventListener(name, paint);
    });
    window.addEventListener("resize", paint);
    paint();
  }

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
    // An autoplaying element may have started before this script ran: its "play" came
    // before the listener above, so say it now, or the embedding page never hears it.
    if (!media.paused) post("play");
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
