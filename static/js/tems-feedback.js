/* TEMS: a failed htmx answer is never silent.
 *
 * htmx swaps nothing for a 4xx/5xx (htmx-config in base.html) and nothing arrives at all when the network fails,
 * so the person would only see the button come back. Each failure puts one dismissible alert in #alerts (a live
 * region outside every swapped part of the page) saying what happened and what to do; the next answer that
 * succeeds clears it. Retries with the same key (tems-idempotency.js) mark the event temsRetrying and stay quiet.
 */
(function () {
  "use strict";

  var SAFE_AGAIN = "Tapping again is safe: TEMS applies each tap once.";

  function explain(status, kind) {
    if (!status) {
      return ["We could not reach TEMS.", "Check your connection and tap again. " + SAFE_AGAIN];
    }
    if (status === 403 && kind === "csrf") {
      return ["Your session changed in another tab.", "Reload this page, then tap again."];
    }
    if (status === 403) return ["You are not allowed to do that.", "If you think you should be, log in again."];
    if (status === 404) return ["That is no longer there.", "Reload the page to see what is there now."];
    if (status === 502 || status === 503 || status === 504) {
      return ["TEMS is not answering right now (error " + status + ").", "Wait a moment and tap again. " + SAFE_AGAIN];
    }
    if (status >= 500) {
      return ["Something went wrong inside TEMS (error " + status + ").", "Tap again in a moment. " + SAFE_AGAIN];
    }
    return ["TEMS could not do that (error " + status + ").", "Reload the page and try again."];
  }

  function alerts() {
    return document.getElementById("alerts");
  }

  function show(status, kind) {
    var region = alerts();
    if (!region) return;
    var text = explain(status, kind);
    var alert = document.createElement("div");
    alert.className = "alert";
    alert.dataset.status = String(status || 0);
    var message = document.createElement("p");
    var what = document.createElement("strong");
    what.textContent = text[0];
    message.appendChild(what);
    message.appendChild(document.createTextNode(" " + text[1]));
    var dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "alert-dismiss";
    dismiss.textContent = "Dismiss";
    alert.appendChild(message);
    alert.appendChild(dismiss);
    region.replaceChildren(alert); // one failure at a time: the latest is the one that matters
  }

  function clear() {
    var region = alerts();
    if (region) region.replaceChildren();
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest(".alert-dismiss");
    if (button) button.closest(".alert").remove();
  });

  document.addEventListener("htmx:responseError", function (event) {
    if (event.detail.temsRetrying) return;
    var xhr = event.detail.xhr;
    show(xhr.status, xhr.getResponseHeader("TEMS-Error"));
  });

  document.addEventListener("htmx:sendError", function (event) {
    if (!event.detail.temsRetrying) show(0);
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.detail.successful && event.detail.xhr && event.detail.xhr.status) clear();
  });
})();
