/* TEMS: one tap = one Idempotency-Key.
 *
 * Forms marked data-idempotent carry a hidden idempotency_key. The server renders a fresh one (so a plain
 * form post works without JavaScript); with JavaScript a new key is made at the moment of each tap, so a
 * deliberate second tap is a new request. A network failure is retried once with the SAME key: if the first
 * attempt did reach the server, the retry is answered with its stored result instead of applying it twice.
 *
 * data-disable-while-in-flight="false" on the form keeps the button enabled while a request is in flight
 * (the lab uses it to show that real double taps are harmless too).
 */
(function () {
  "use strict";

  function uuid4() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      return window.crypto.randomUUID(); // only on secure origins (https, localhost)
    }
    // Plain http on a LAN address has no randomUUID, but getRandomValues works everywhere crypto exists.
    var bytes = new Uint8Array(16);
    if (window.crypto && typeof window.crypto.getRandomValues === "function") {
      window.crypto.getRandomValues(bytes);
    } else {
      for (var i = 0; i < 16; i++) bytes[i] = Math.floor(Math.random() * 256);
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40; // version 4
    bytes[8] = (bytes[8] & 0x3f) | 0x80; // RFC 4122 variant
    var hex = Array.prototype.map.call(bytes, function (b) { return (b + 0x100).toString(16).slice(1); }).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-" + hex.slice(12, 16) + "-" + hex.slice(16, 20) + "-" + hex.slice(20);
  }

  function idempotentForm(element) {
    return element && element.closest ? element.closest("form[data-idempotent]") : null;
  }

  function keyField(form) {
    return form.querySelector("input[name=idempotency_key]");
  }

  function setBusy(form, busy) {
    if (form.dataset.disableWhileInFlight === "false") return;
    form.querySelectorAll("button[type=submit], button:not([type])").forEach(function (button) {
      button.disabled = busy;
      button.setAttribute("aria-busy", busy ? "true" : "false");
    });
  }

  // Capture phase: runs before htmx reads the form, so the request carries the key made for this tap.
  document.addEventListener("submit", function (event) {
    var form = idempotentForm(event.target);
    if (!form) return;
    if (form.dataset.retrying === "true") return; // a network retry of the same tap keeps its key
    var field = keyField(form);
    if (field) field.value = uuid4();
    form.dataset.retried = "false";
  }, true);

  document.addEventListener("htmx:configRequest", function (event) {
    var form = idempotentForm(event.detail.elt);
    var field = form && keyField(form);
    if (field) event.detail.headers["Idempotency-Key"] = field.value;
  });

  document.addEventListener("htmx:beforeRequest", function (event) {
    var form = idempotentForm(event.detail.elt);
    if (form) setBusy(form, true);
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    var form = idempotentForm(event.detail.elt);
    if (!form) return;
    form.dataset.retrying = "false";
    if (!event.detail.failed || event.detail.xhr.status) setBusy(form, false);
  });

  // No response at all (connection dropped, server unreachable): retry once, with the same key.
  document.addEventListener("htmx:sendError", function (event) {
    var form = idempotentForm(event.detail.elt);
    if (!form) return;
    if (form.dataset.retried !== "true") {
      form.dataset.retried = "true";
      form.dataset.retrying = "true";
      window.setTimeout(function () { window.htmx.trigger(form, "submit"); }, 300);
      return;
    }
    setBusy(form, false);
    var status = form.querySelector(".form-status");
    if (status) status.textContent = "We could not reach TEMS. Check your connection and tap again.";
  });

  // A plain (non-htmx) post: disable the button so the page's own double tap is not a second request.
  document.addEventListener("submit", function (event) {
    var form = idempotentForm(event.target);
    if (form && !form.hasAttribute("hx-post") && !event.defaultPrevented) {
      window.setTimeout(function () { setBusy(form, true); }, 0);
    }
  });

  window.temsUuid4 = uuid4; // for the browser tests and the lab
})();
