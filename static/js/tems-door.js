/* TEMS door page: scan a ticket, get a true answer, lose nothing when the network drops.
 *
 * Every scan is written to IndexedDB first, with its own Idempotency-Key made at the moment of the scan, and
 * only then sent. A scan whose answer does not arrive (offline, timeout, 5xx) stays "pending" in the store and
 * is sent again with the SAME key when the network returns, on the next page load, or every few seconds: the
 * server applies it once and answers every retry with the first answer, so the pending scan resolves to the
 * server's true answer (which may be "already checked in" if another door admitted the ticket meanwhile).
 *
 * Scanning: the browser's BarcodeDetector where it exists, otherwise jsQR (vendored from npm) on video frames
 * or on a photo; or a typed ticket code. No inline script: everything the page needs is in data attributes.
 */
(function () {
  "use strict";

  var root = document.getElementById("door");
  if (!root) return;

  var EVENT_ID = root.dataset.eventId;
  var CHECKIN_URL = root.dataset.checkinUrl;
  var STATS_URL = root.dataset.statsUrl;
  var ANSWERS_URL = root.dataset.answersUrl; // ends in a placeholder id, replaced by the scanned registration's
  var CSRF = root.dataset.csrfToken;
  var DB_NAME = "tems-door";
  var STORE = "scans";
  var FLUSH_EVERY_MS = 5000;
  var STATS_EVERY_MS = 5000;
  // A ticket held in front of the camera is one scan, not thirty; scanning it again on purpose takes a moment.
  var SAME_CODE_PAUSE_MS = 10000;
  var FEEDBACK_MS = 4000;
  var SHOWN_SCANS = 30;
  // Statuses that say "not now" rather than "this is the answer": the scan stays pending and is sent again.
  var TRANSIENT = { 0: true, 401: true, 403: true, 408: true, 425: true, 429: true, 500: true, 502: true, 503: true, 504: true };

  var feedback = document.getElementById("feedback");
  var scansList = document.getElementById("scans");
  var doorInput = document.getElementById("door-name");
  var sending = {};
  var flushing = false;
  var feedbackTimer = null;

  // --- small helpers -------------------------------------------------------------------------------------

  function uuid4() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") return window.crypto.randomUUID();
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    var hex = Array.prototype.map.call(bytes, function (b) { return (b + 0x100).toString(16).slice(1); }).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
  }

  function hhmm(iso) {
    var date = new Date(iso);
    if (isNaN(date.getTime())) return iso;
    return String(date.getHours()).padStart(2, "0") + ":" + String(date.getMinutes()).padStart(2, "0");
  }

  // --- IndexedDB: the queue that survives a reload -------------------------------------------------------

  var dbPromise = new Promise(function (resolve, reject) {
    var request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = function () {
      var store = request.result.createObjectStore(STORE, { keyPath: "key" });
      store.createIndex("eventId", "eventId");
    };
    request.onsuccess = function () { resolve(request.result); };
    request.onerror = function () { reject(request.error); };
  });

  function tx(mode, work) {
    return dbPromise.then(function (db) {
      return new Promise(function (resolve, reject) {
        var transaction = db.transaction(STORE, mode);
        var result = work(transaction.objectStore(STORE));
        transaction.oncomplete = function () { resolve(result && "result" in result ? result.result : result); };
        transaction.onerror = function () { reject(transaction.error); };
      });
    });
  }

  function saveScan(scan) { return tx("readwrite", function (store) { store.put(scan); }); }

  function eventScans() {
    return tx("readonly", function (store) { return store.index("eventId").getAll(EVENT_ID); })
      .then(function (scans) { return scans.sort(function (a, b) { return a.scannedAt - b.scannedAt; }); });
  }

  // --- what a scan's answer means to a doorkeeper --------------------------------------------------------

  function describe(scan) {
    if (scan.state === "pending") {
      return { kind: "pending", title: "Pending",
               detail: "Not sent yet: provisional. It is sent when the network returns." };
    }
    var body = scan.body || {};
    if (scan.undone) return { kind: "pending", title: "Undone", detail: (body.user || "") + ": check-in taken back" };
    if (scan.status === 201) return { kind: "ok", title: "Checked in", detail: body.user || "" };
    if (scan.status === 200 && body.status === "already_checked_in") {
      var where = body.door ? " at door " + body.door : "";
      return { kind: "already", title: "Already checked in",
               detail: "Already checked in at " + hhmm(body.checked_in_at) + where + " by " + body.checked_in_by };
    }
    if (scan.status === 200 || scan.status === 201) return { kind: "ok", title: "Checked in", detail: body.user || "" };
    return { kind: "refused", title: "Not admissible", detail: body.detail || ("Refused (" + scan.status + ")") };
  }

  // --- feedback: full screen, a sound, a vibration --------------------------------------------------------

  var audio = null;
  // Browsers only let a page make sound after a tap: every scanning gesture unlocks it for the answer to come.
  function unlockAudio() {
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      if (audio.state === "suspended") audio.resume();
    } catch (error) { /* no audio on this device */ }
  }

  function beep(kind) {
    var patterns = { ok: [[880, 0.12], [1320, 0.18]], already: [[220, 0.6]], refused: [[440, 0.2], [330, 0.3]], pending: [[660, 0.1]] };
    var vibrations = { ok: [120], already: [400, 100, 400], refused: [200, 100, 200], pending: [60] };
    if (navigator.vibrate) navigator.vibrate(vibrations[kind] || [100]);
    try {
      audio = audio || new (window.AudioContext || window.webkitAudioContext)();
      var at = audio.currentTime;
      (patterns[kind] || patterns.pending).forEach(function (tone) {
        var oscillator = audio.createOscillator();
        var gain = audio.createGain();
        oscillator.type = kind === "already" ? "square" : "sine";
        oscillator.frequency.value = tone[0];
        gain.gain.value = 0.2;
        oscillator.connect(gain);
        gain.connect(audio.destination);
        oscillator.start(at);
        oscillator.stop(at + tone[1]);
        at += tone[1] + 0.05;
      });
    } catch (error) { /* no audio on this device: the screen and the vibration still tell */ }
  }

  // The answers staff marked "show at the door", read after the scan's answer (online only: offline, the
  // scan itself is provisional and the answers wait for the list on the event page).
  function showAnswers(registrationId) {
    var list = feedback.querySelector(".door-feedback-answers");
    list.textContent = "";
    list.hidden = true;
    if (!registrationId || !ANSWERS_URL || !/^[A-Za-z0-9_-]+$/.test(registrationId)) return;
    fetch(ANSWERS_URL.replace(/000000000000\/?$/, registrationId), { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : { answers: [] }; })
      .then(function (body) {
        (body.answers || []).forEach(function (answer) {
          var term = document.createElement("dt");
          term.textContent = answer.label;
          var value = document.createElement("dd");
          value.textContent = answer.value;
          list.appendChild(term);
          list.appendChild(value);
        });
        list.hidden = !(body.answers || []).length;
      })
      .catch(function () { /* offline now: the name and the verdict are what matters at the door */ });
  }

  function showFeedback(scan) {
    var said = describe(scan);
    feedback.className = "door-feedback " + said.kind;
    feedback.dataset.kind = said.kind;
    feedback.querySelector(".door-feedback-title").textContent = said.title;
    feedback.querySelector(".door-feedback-detail").textContent = said.detail;
    showAnswers(said.kind === "ok" || said.kind === "already" ? (scan.body || {}).registration_id : null);
    feedback.hidden = false;
    beep(said.kind);
    clearTimeout(feedbackTimer);
    feedbackTimer = setTimeout(hideFeedback, FEEDBACK_MS);
  }

  function hideFeedback() { feedback.hidden = true; }
  feedback.addEventListener("click", hideFeedback);

  // --- the list of scans ----------------------------------------------------------------------------------

  function render() {
    return eventScans().then(function (scans) {
      scansList.textContent = "";
      scans.slice(-SHOWN_SCANS).reverse().forEach(function (scan) {
        var said = describe(scan);
        var item = document.createElement("li");
        item.className = said.kind;
        item.dataset.key = scan.key;
        item.dataset.state = scan.state;
        var state = document.createElement("span");
        state.className = "scan-state";
        state.textContent = said.title;
        var detail = document.createElement("span");
        detail.className = "scan-detail";
        detail.textContent = " · " + said.detail + " · scanned " + hhmm(new Date(scan.scannedAt).toISOString());
        item.appendChild(state);
        item.appendChild(detail);
        if (scan.status === 201 && !scan.undone) {
          var undo = document.createElement("button");
          undo.type = "button";
          undo.className = "link-button scan-undo";
          undo.dataset.key = scan.key;
          undo.textContent = "Undo check-in";
          item.appendChild(document.createTextNode(" "));
          item.appendChild(undo);
        }
        scansList.appendChild(item);
      });
    });
  }

  // --- sending: the same key for every attempt of one scan ------------------------------------------------

  function send(scan, show) {
    if (sending[scan.key]) return Promise.resolve();
    sending[scan.key] = true;
    return fetch(CHECKIN_URL, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Idempotency-Key": scan.key, "X-CSRFToken": CSRF },
      body: JSON.stringify({ ticket: scan.ticket, door: scan.door }),
    }).then(function (response) {
      setConnection(true);
      if (TRANSIENT[response.status]) throw new Error("transient " + response.status);
      return response.json().catch(function () { return {}; }).then(function (body) {
        scan.state = "done";
        scan.status = response.status;
        scan.body = body;
        return saveScan(scan).then(function () {
          if (show) showFeedback(scan);
          refreshStats();
        });
      });
    }, function (networkError) {
      setConnection(false);
      throw networkError;
    }).catch(function () {
      if (show) showFeedback(scan); // shown as pending: provisional until the server answers
    }).then(function () {
      delete sending[scan.key];
      return render();
    });
  }

  function flush() {
    if (flushing) return Promise.resolve();
    flushing = true;
    return eventScans().then(function (scans) {
      var pending = scans.filter(function (scan) { return scan.state === "pending"; });
      // One after another, oldest first: the queue is replayed in the order the doorkeeper scanned.
      return pending.reduce(function (chain, scan) {
        return chain.then(function () { return send(scan, false); });
      }, Promise.resolve());
    }).then(function () { flushing = false; }, function () { flushing = false; });
  }

  function scanTicket(text) {
    text = (text || "").trim();
    if (!text) return Promise.resolve();
    var scan = { key: uuid4(), eventId: EVENT_ID, ticket: text, door: doorInput.value.trim(),
                 scannedAt: Date.now(), state: "pending" };
    // Stored before it is sent: a reload or a crash between the two loses nothing.
    return saveScan(scan).then(render).then(function () { return send(scan, true); });
  }

  // A doorkeeper's mistake is taken back with its own key per tap; the server logs who did it.
  scansList.addEventListener("click", function (event) {
    var button = event.target.closest(".scan-undo");
    if (!button) return;
    button.disabled = true;
    eventScans().then(function (scans) {
      var scan = scans.filter(function (s) { return s.key === button.dataset.key; })[0];
      if (!scan) return;
      return fetch(CHECKIN_URL + "/" + encodeURIComponent(scan.body.registration_id), {
        method: "DELETE",
        credentials: "same-origin",
        headers: { "Idempotency-Key": uuid4(), "X-CSRFToken": CSRF },
      }).then(function (response) {
        if (!response.ok) throw new Error("undo refused: " + response.status);
        scan.undone = true;
        return saveScan(scan);
      });
    }).then(render).then(refreshStats).catch(function () {
      button.disabled = false;
      alert("The undo did not go through; try again when online.");
    });
  });

  // --- live counts and the connection banner --------------------------------------------------------------

  function refreshStats() {
    return fetch(STATS_URL, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      if (!response.ok) return;
      return response.json().then(function (stats) {
        document.getElementById("checked-in-count").textContent = stats.checked_in;
        document.getElementById("confirmed-count").textContent = stats.confirmed;
      });
    }).catch(function () { /* offline: the last counts stay on screen */ });
  }

  function setConnection(online) {
    var banner = document.getElementById("connection");
    banner.textContent = online ? "Online" : "Offline";
    banner.className = "door-connection " + (online ? "online" : "offline");
    document.getElementById("offline-note").hidden = online;
  }

  window.addEventListener("online", function () { setConnection(true); flush().then(refreshStats); });
  window.addEventListener("offline", function () { setConnection(false); });
  setConnection(navigator.onLine);

  // --- inputs: typed code, camera, photo ------------------------------------------------------------------

  var savedDoor = localStorage.getItem("tems-door-name");
  if (savedDoor) doorInput.value = savedDoor;
  doorInput.addEventListener("change", function () { localStorage.setItem("tems-door-name", doorInput.value.trim()); });

  var typedInput = document.getElementById("ticket-code");
  var ticketFromLink = new URLSearchParams(location.hash.slice(1)).get("ticket");
  if (ticketFromLink) typedInput.value = ticketFromLink; // a camera app opened the ticket URL: confirm by tapping

  document.getElementById("typed").addEventListener("submit", function (event) {
    event.preventDefault();
    unlockAudio();
    var text = typedInput.value;
    typedInput.value = "";
    scanTicket(text);
  });

  var detector = null;
  function detectorReady() {
    if (detector !== null) return Promise.resolve(detector);
    if (!("BarcodeDetector" in window)) { detector = false; return Promise.resolve(false); }
    return window.BarcodeDetector.getSupportedFormats().then(function (formats) {
      detector = formats.indexOf("qr_code") >= 0 ? new window.BarcodeDetector({ formats: ["qr_code"] }) : false;
      return detector;
    }, function () { detector = false; return false; });
  }

  var canvas = document.createElement("canvas");
  function decode(source, width, height) {
    return detectorReady().then(function (native) {
      if (native) {
        return native.detect(source).then(function (codes) { return codes.length ? codes[0].rawValue : null; });
      }
      if (typeof window.jsQR !== "function" || !width || !height) return null;
      canvas.width = width;
      canvas.height = height;
      var context = canvas.getContext("2d", { willReadFrequently: true });
      context.drawImage(source, 0, 0, width, height);
      var found = window.jsQR(context.getImageData(0, 0, width, height).data, width, height);
      return found ? found.data : null;
    });
  }

  var lastCode = { text: null, at: 0 };
  function onCode(text) {
    if (!text) return;
    var now = Date.now();
    if (text === lastCode.text && now - lastCode.at < SAME_CODE_PAUSE_MS) return;
    lastCode = { text: text, at: now };
    scanTicket(text);
  }

  var video = document.getElementById("camera");
  document.getElementById("camera-start").addEventListener("click", function () {
    unlockAudio();
    if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
      alert("This browser cannot use the camera here; scan a photo or type the ticket code.");
      return;
    }
    navigator.mediaDevices.getUserMedia({ video: { facingMode: "environment" }, audio: false }).then(function (stream) {
      video.srcObject = stream;
      video.hidden = false;
      return video.play().then(function () {
        var busy = false;
        (function tick() {
          // While an answer is on screen the doorkeeper is reading it, not scanning.
          if (!busy && feedback.hidden && video.readyState >= 2) {
            busy = true;
            decode(video, video.videoWidth, video.videoHeight).then(onCode).catch(function () {}).then(function () { busy = false; });
          }
          requestAnimationFrame(tick);
        })();
      });
    }).catch(function (error) {
      alert("The camera could not be started (" + error.name + "); scan a photo or type the ticket code.");
    });
  });

  document.getElementById("photo").addEventListener("change", function (event) {
    unlockAudio();
    var file = event.target.files && event.target.files[0];
    event.target.value = "";
    if (!file) return;
    createImageBitmap(file).then(function (bitmap) {
      return decode(bitmap, bitmap.width, bitmap.height);
    }).then(function (text) {
      if (text) { lastCode = { text: text, at: Date.now() }; return scanTicket(text); }
      showFeedback({ state: "done", status: 400, body: { detail: "No QR code found in that photo." } });
    });
  });

  // --- offline reloads: a service worker keeps this page and its scripts --------------------------------

  if ("serviceWorker" in navigator && "caches" in window) {
    navigator.serviceWorker.register(root.dataset.workerUrl).then(function () {
      var assets = JSON.parse(root.dataset.assets);
      return caches.open("tems-door").then(function (cache) {
        return cache.addAll([location.pathname].concat(assets));
      });
    }).catch(function () { /* no offline reloads on this browser; the queue still survives */ });
  }

  render().then(flush).then(refreshStats);
  setInterval(function () { flush(); }, FLUSH_EVERY_MS);
  setInterval(function () { if (navigator.onLine) refreshStats(); }, STATS_EVERY_MS);
})();
