/* TEMS: one tap = one Idempotency-Key.
 *
 * Forms marked data-idempotent carry a hidden idempotency_key. The server renders a fresh one (so a plain
 * form post works without JavaScript); with JavaScript a new key is made at the moment of each tap, so a
 * deliberate second tap is a new request. Two failures are retried once with the SAME key, so that if the first
 * attempt did reach the server the retry is answered with its stored result instead of being applied twice:
 * - no answer at all (network failure): retried after a short pause;
 * - a stale CSRF token (the session was renewed in another tab): the token is refreshed, then retried.
 *
 * Everything else htmx does itself: hx-disabled-elt and .htmx-request give the busy state, htmx-config in
 * base.html decides which answers swap, and tems-feedback.js explains a failed answer.
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

  function retrySameKey(form, kind, delay) {
    form.dataset.retried = kind;
    form.dataset.retrying = "true";
    window.setTimeout(function () { window.htmx.trigger(form, "submit"); }, delay);
  }

  // Django's CSRF cookie holds the current token (readable by design: CSRF_COOKIE_HTTPONLY is off). A log-in in
  // another tab replaced it, so the token this page was rendered with, in hx-headers and in each form, is stale.
  function refreshCsrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (!match) return false;
    var token = decodeURIComponent(match[1]);
    var headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    headers["X-CSRFToken"] = token;
    document.body.setAttribute("hx-headers", JSON.stringify(headers));
    document.querySelectorAll("input[name=csrfmiddlewaretoken]").forEach(function (input) { input.value = token; });
    return true;
  }

  // Capture phase: runs before htmx reads the form, so the request carries the key made for this tap.
  document.addEventListener("submit", function (event) {
    var form = idempotentForm(event.target);
    if (!form) return;
    if (form.dataset.retrying === "true") { // a retry of the same tap keeps its key
      form.dataset.retrying = "false";
      return;
    }
    var field = keyField(form);
    if (field) field.value = uuid4();
    form.dataset.retried = "";
  }, true);

  document.addEventListener("htmx:configRequest", function (event) {
    var form = idempotentForm(event.detail.elt);
    var field = form && keyField(form);
    if (field) event.detail.headers["Idempotency-Key"] = field.value;
  });

  // No response at all (connection dropped, server unreachable): retry once, with the same key.
  document.addEventListener("htmx:sendError", function (event) {
    var form = idempotentForm(event.detail.elt);
    if (!form || form.dataset.retried) return; // tems-feedback.js tells the person
    event.detail.temsRetrying = true;
    retrySameKey(form, "network", 300);
  }, true);

  // A stale CSRF token (the 403 page says so in TEMS-Error): refresh it and send the same tap again.
  document.addEventListener("htmx:responseError", function (event) {
    var form = idempotentForm(event.detail.elt);
    var xhr = event.detail.xhr;
    if (!form || form.dataset.retried || xhr.status !== 403 || xhr.getResponseHeader("TEMS-Error") !== "csrf") return;
    if (!refreshCsrfToken()) return;
    event.detail.temsRetrying = true;
    retrySameKey(form, "csrf", 0);
  }, true);

  window.temsUuid4 = uuid4; // for the browser tests and the lab
})();
