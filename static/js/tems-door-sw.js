/* TEMS door page service worker: the page and its scripts load from the last copy when the network is down.
 *
 * Served under the door page's own path (its scope), so it serves that page only. Network first: online the
 * page is always fresh; offline the copy the page cached (see tems-door.js) is served, and the scans queued in
 * IndexedDB are still there. API calls are never cached: an answer comes from the server or not at all.
 */
"use strict";

var CACHE = "tems-door";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("fetch", function (event) {
  var request = event.request;
  var url = new URL(request.url);
  var cacheable = request.method === "GET" && url.origin === self.location.origin
    && (request.mode === "navigate" || url.pathname.indexOf("/static/") === 0);
  if (!cacheable) return;
  event.respondWith(fetch(request).then(function (response) {
    if (response.ok && response.type === "basic" && !response.redirected) {
      var copy = response.clone();
      caches.open(CACHE).then(function (cache) { cache.put(request, copy); });
    }
    return response;
  }).catch(function () {
    return caches.match(request, { ignoreSearch: true }).then(function (cached) {
      return cached || Response.error();
    });
  }));
});
