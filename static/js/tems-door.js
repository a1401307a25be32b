/* TEMS door page: scan a ticket, get a true answer, lose nothing when the network drops.
 *
 * Every scan is written to IndexedDB first, with its own Idempotency-Key made at the moment of the scan, and
 * only then sent. A scan whose answer does not arrive (offline, timeout, 5xx) stays "pending" in the store and
 * is sent again with the SAME key when the network returns, on the next page load, or every few seconds: the
 * server applies it once and answers every retry with the first answer, so the pending scan resolves to the
 * server's true answer (which may be "already checked in" if another door admitted the ticket meanwhile).
 *
 * Scanning: the browser's BarcodeDetector where it exists, otherwise jsQR (vendored from npm) on video frames
 * or on a photo; or a typed ticket code (the 12-character code under the QR code, or a pasted ticket).
 *
 * Without a QR code: a search by name, username or code. Online it asks the server; when the door opens it also
 * keeps the event's whole list in IndexedDB, so offline the search runs on that copy. Every row carries the
 * signed ticket of its registration, and a tap on "Check in" is a scan of that ticket: stored first, with its
 * own key, sent (or queued) exactly like a scan, so the server's one-check-in promise is the same.
 * No inline script: everything the page needs is in data attributes.
 */
(function () {
  "use strict";

  var root = document.getElementById("door");
  if (!root) return;

  var EVENT_ID = root.dataset.eventId;
  var CHECKIN_URL = root.dataset.checkinUrl;
  var STATS_URL = root.dataset.statsUrl;
  var SEARCH_URL = root.dataset.searchUrl;
  var LIST_URL = root.dataset.listUrl;
  var ANSWERS_URL = root.dataset.answersUrl; // ends in a placeholder id, replaced by the scanned registration's
  var CSRF = root.dataset.csrfToken;
  var DB_NAME = "tems-door";
  var STORE = "scans";
  var PEOPLE = "people"; // the event's list as the door opened, for searching offline
  var SEARCH_DELAY_MS = 250;
  var SHOWN_RESULTS = 20;
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
  var sending = {};  // key -> the send in flight
  // Keys whose tap came while a flush was already sending them: that send's answer is the tap's to show.
  var showWhenSent = {};
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
    var request = indexedDB.open(DB_NAME, 2);
    request.onupgradeneeded = function () {
      var db = request.result;
      if (!db.objectStoreNames.contains(STORE)) {
        db.createObjectStore(STORE, { keyPath: "key" }).createIndex("eventId", "eventId");
      }
      if (!db.objectStoreNames.contains(PEOPLE)) {
        db.createObjectStore(PEOPLE, { keyPath: "id" }).createIndex("eventId", "eventId");
      }
    };
    request.onsuccess = function () { resolve(request.result); };
    request.onerror = function () { reject(request.error); };
  });

  function tx(mode, work, storeName) {
    storeName = storeName || STORE;
    return dbPromise.then(function (db) {
      return new Promise(function (resolve, reject) {
        var transaction = db.transaction(storeName, mode);
        var result = work(transaction.objectStore(storeName));
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
               detail: (scan.label ? scan.label + ": " : "") + "not sent yet: provisional. It is sent when the network returns." };
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
          undo.className = "button danger scan-undo";
          undo.dataset.key = scan.key;
          undo.dataset.name = (scan.body && scan.body.user) || scan.label || "";
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
    if (sending[scan.key]) {
      // A flush picked the scan up between its save and this send: one request, and its answer (or its failure,
      // shown as provisional) goes on the screen when it comes, instead of no feedback for the tap at all.
      if (show) showWhenSent[scan.key] = true;
      return sending[scan.key];
    }
    var shown = function () { return show || showWhenSent[scan.key]; };
    sending[scan.key] = fetch(CHECKIN_URL, {
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
        return saveScan(scan).then(function () { return rememberCheckIn(body); }).then(function () {
          if (shown()) showFeedback(scan);
          refreshStats();
        });
      });
    }, function (networkError) {
      setConnection(false);
      throw networkError;
    }).catch(function () {
      if (shown()) showFeedback(scan); // shown as pending: provisional until the server answers
    }).then(function () {
      delete sending[scan.key];
      delete showWhenSent[scan.key];
      return render();
    });
    return sending[scan.key];
  }

  // A flush asked for while one runs (the network returns while the last offline attempt is still failing) runs
  // again right after it, instead of waiting for the next tick: the queue goes out as soon as it can.
  var flushAgain = false;
  function flush() {
    if (flushing) { flushAgain = true; return flushing; }
    flushing = eventScans().then(function (scans) {
      var pending = scans.filter(function (scan) { return scan.state === "pending"; });
      // One after another, oldest first: the queue is replayed in the order the doorkeeper scanned.
      return pending.reduce(function (chain, scan) {
        return chain.then(function () { return send(scan, false); });
      }, Promise.resolve());
    }).catch(function () {}).then(function () {
      flushing = false;
      if (flushAgain) { flushAgain = false; return flush(); }
    });
    return flushing;
  }

  function scanTicket(text, label) {
    text = (text || "").trim();
    if (!text) return Promise.resolve();
    var scan = { key: uuid4(), eventId: EVENT_ID, ticket: text, door: doorInput.value.trim(),
                 scannedAt: Date.now(), state: "pending", label: label || "" };
    // Stored before it is sent: a reload or a crash between the two loses nothing.
    return saveScan(scan).then(render).then(function () { return send(scan, true); });
  }

  // A doorkeeper's mistake is taken back with its own key per tap; the server logs who did it.
  scansList.addEventListener("click", function (event) {
    var button = event.target.closest(".scan-undo");
    if (!button) return;
    // A tap next to the list is easy to make by mistake, and an undo lets the ticket in again: ask first.
    if (!window.confirm("Undo the check-in of " + (button.dataset.name || "this ticket") + "? They will have to be checked in again.")) return;
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

  // --- find by name: online from the server, offline from the list kept when the door opened --------------

  var findInput = document.getElementById("find-text");
  var findNote = document.getElementById("find-note");
  var findResults = document.getElementById("find-results");
  var listNote = document.getElementById("list-note");
  var searchTimer = null;
  var searchSeq = 0;

  function fold(text) { return (text || "").toLocaleLowerCase(); }
  function codeOf(text) { return fold(text).replace(/[\s.\-]+/g, ""); }
  function fullName(row) { return ((row.first_name || "") + " " + (row.last_name || "")).trim(); }

  function personRecord(row) {
    var record = Object.assign({}, row);
    record.id = EVENT_ID + ":" + row.registration_id;
    record.eventId = EVENT_ID;
    return record;
  }

  // The door's copy of the list, read page by page when the door opens online and put in place whole, in one
  // IndexedDB transaction: a cancelled registration leaves it, and a read cut short leaves the last copy intact.
  function cacheList() {
    var rows = [];
    function page(url) {
      return fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (response) {
        if (!response.ok) throw new Error("list " + response.status);
        return response.json();
      }).then(function (body) {
        rows = rows.concat(body.attendees);
        return body.next ? page(body.next) : null;
      });
    }
    return page(LIST_URL).then(function () {
      return tx("readwrite", function (store) {
        var old = store.index("eventId").openKeyCursor(IDBKeyRange.only(EVENT_ID));
        old.onsuccess = function () {
          var cursor = old.result;
          if (cursor) { store.delete(cursor.primaryKey); cursor.continue(); return; }
          rows.forEach(function (row) { store.put(personRecord(row)); });
        };
      }, PEOPLE);
    }).then(function () {
      var at = new Date();
      localStorage.setItem("tems-door-list-" + EVENT_ID, at.toISOString());
      listNote.textContent = rows.length + (rows.length === 1 ? " person" : " people") +
        " kept on this phone for searching offline (as of " + hhmm(at.toISOString()) + ").";
      listNote.dataset.state = "cached";
    }).catch(function () { showListAge(); });
  }

  function showListAge() {
    var at = localStorage.getItem("tems-door-list-" + EVENT_ID);
    listNote.textContent = at ? "Offline search uses the list kept at " + hhmm(at) + "." : "No list kept on this phone yet: search needs the network.";
  }

  // A check-in answered by the server also updates the kept copy, so an offline search after it tells the truth.
  function rememberCheckIn(body) {
    if (!body || !body.registration_id || !body.checked_in_at) return Promise.resolve();
    var id = EVENT_ID + ":" + body.registration_id;
    return tx("readwrite", function (store) {
      var request = store.get(id);
      request.onsuccess = function () {
        var row = request.result;
        if (!row) return;
        row.checked_in_at = body.checked_in_at;
        row.checked_in_door = body.door;
        row.checked_in_by = body.checked_in_by;
        store.put(row);
      };
    }, PEOPLE).catch(function () {});
  }

  function searchLocal(text) {
    var words = fold(text).split(/\s+/).filter(Boolean);
    var code = codeOf(text);
    return tx("readonly", function (store) { return store.index("eventId").getAll(EVENT_ID); }, PEOPLE).then(function (rows) {
      var found = rows.filter(function (row) {
        if (code.length >= 12 && /^[0-9a-f]+$/.test(code) && row.registration_id.indexOf(code) === 0) return true;
        var fields = [fold(row.first_name), fold(row.last_name), fold(row.user)];
        return words.length > 0 && words.every(function (word) {
          return fields.some(function (field) { return field.indexOf(word) === 0; });
        });
      });
      found.sort(function (a, b) { return fold(a.last_name + a.first_name + a.user) < fold(b.last_name + b.first_name + b.user) ? -1 : 1; });
      return { attendees: found.slice(0, SHOWN_RESULTS), more: found.length > SHOWN_RESULTS, offline: true };
    });
  }

  function searchOnline(text) {
    return fetch(SEARCH_URL + "?q=" + encodeURIComponent(text), { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        setConnection(true);
        return response.json().catch(function () { return {}; }).then(function (body) {
          if (response.status === 400) return { attendees: [], more: false, refused: body.detail || "Type a name." };
          if (!response.ok) throw new Error("search " + response.status);
          return body;
        });
      });
  }

  function stateText(row, queued) {
    if (queued) return "Check-in queued: sent when the network returns";
    if (row.checked_in_at) {
      return "Checked in at " + hhmm(row.checked_in_at) + (row.checked_in_door ? " at door " + row.checked_in_door : "")
        + (row.checked_in_by ? " by " + row.checked_in_by : "");
    }
    if (row.status === "confirmed") return "Confirmed, not checked in";
    if (row.status === "offered") return "Offered a seat, not yet accepted";
    if (row.status === "waitlisted") return "On the waiting list: no seat";
    return row.status;
  }

  function renderResults(result, text) {
    return eventScans().then(function (scans) {
      var queued = {};
      scans.forEach(function (scan) { if (scan.state === "pending") queued[scan.ticket] = true; });
      findResults.textContent = "";
      var rows = result.attendees || [];
      rows.forEach(function (row) {
        var item = document.createElement("li");
        item.className = "door-result status-" + row.status + (row.checked_in_at ? " checked-in" : "");
        item.dataset.registrationId = row.registration_id;
        var who = document.createElement("p");
        who.className = "door-result-name";
        var name = document.createElement("strong");
        name.textContent = fullName(row) || row.user;
        who.appendChild(name);
        var meta = document.createElement("span");
        meta.className = "help";
        meta.textContent = " " + row.user + " · code " + row.code;
        who.appendChild(meta);
        var state = document.createElement("p");
        state.className = "door-result-state";
        state.textContent = stateText(row, queued[row.ticket]);
        item.appendChild(who);
        item.appendChild(state);
        if (row.status === "confirmed" && !row.checked_in_at && !queued[row.ticket]) {
          var button = document.createElement("button");
          button.type = "button";
          button.className = "button primary door-result-checkin";
          button.textContent = "Check in";
          button.setAttribute("aria-label", "Check in " + (fullName(row) || row.user));
          button.addEventListener("click", function () {
            unlockAudio();
            button.disabled = true;
            scanTicket(row.ticket, fullName(row) || row.user).then(function () { runSearch(findInput.value); });
          });
          item.appendChild(button);
        }
        findResults.appendChild(item);
      });
      var note = result.refused || (rows.length ? "" : "Nobody at this event matches \u201c" + text + "\u201d.");
      if (result.more) note = "More people match: type more of the name.";
      if (result.offline) note = (note ? note + " " : "") + "Offline: searched the list kept on this phone.";
      findNote.textContent = note;
    });
  }

  function runSearch(text) {
    text = (text || "").trim();
    var seq = ++searchSeq;
    if (!text) { findResults.textContent = ""; findNote.textContent = ""; return Promise.resolve(); }
    var search = navigator.onLine ? searchOnline(text).catch(function () { setConnection(false); return searchLocal(text); })
                                  : searchLocal(text);
    return search.then(function (result) {
      if (seq === searchSeq) return renderResults(result, text); // an older answer never overwrites a newer one
    });
  }

  document.getElementById("find").addEventListener("submit", function (event) {
    event.preventDefault();
    clearTimeout(searchTimer);
    runSearch(findInput.value);
  });
  findInput.addEventListener("input", function () {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(function () { runSearch(findInput.value); }, SEARCH_DELAY_MS);
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

  window.addEventListener("online", function () {
    setConnection(true);
    flush().then(refreshStats).then(function () { return runSearch(findInput.value); });
  });
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
  if (navigator.onLine) cacheList(); else showListAge();
  setInterval(function () { flush(); }, FLUSH_EVERY_MS);
  setInterval(function () { if (navigator.onLine) refreshStats(); }, STATS_EVERY_MS);
})();
