// kh-review console: keeps the bearer token in this tab's sessionStorage and sends it as
// Authorization with every htmx request. No cookies. A link of the form
// /console#token=... signs in and removes the token from the address bar at once.
(function () {
  "use strict";
  var KEY = "kh-review-token";
  var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (m) {
    sessionStorage.setItem(KEY, decodeURIComponent(m[1]));
    history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  document.addEventListener("htmx:configRequest", function (e) {
    var token = sessionStorage.getItem(KEY);
    if (token) e.detail.headers["Authorization"] = "Bearer " + token;
  });
  // A form's Idempotency-Key makes a double click one request. A refusal of its input (400,
  // 422) changed nothing and is recorded under the key: the corrected form needs a new key.
  document.addEventListener("htmx:afterRequest", function (e) {
    var status = e.detail.xhr ? e.detail.xhr.status : 0;
    var elt = e.detail.elt;
    if ((status === 400 || status === 422) && elt && elt.getAttribute("hx-headers")) {
      var bytes = new Uint8Array(16);
      crypto.getRandomValues(bytes);
      var hex = Array.prototype.map.call(bytes, function (b) {
        return ("0" + b.toString(16)).slice(-2);
      }).join("");
      elt.setAttribute("hx-headers", JSON.stringify({ "Idempotency-Key": "console-" + hex }));
    }
  });
  // Focus the outcome of an action, so that keyboard and screen-reader users hear it.
  document.addEventListener("htmx:afterSwap", function (e) {
    var flash = document.getElementById("flash");
    if (flash && e.detail.target && e.detail.target.contains(flash)) {
      flash.setAttribute("tabindex", "-1");
      flash.focus();
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("sign-in");
    if (form) {
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        var value = document.getElementById("token").value.trim().replace(/^Bearer\s+/i, "");
        if (!value) return;
        sessionStorage.setItem(KEY, value);
        document.getElementById("token").value = "";
        document.body.dispatchEvent(new Event("kh:signed-in"));
      });
    }
    var out = document.getElementById("sign-out");
    if (out) {
      out.addEventListener("click", function () {
        sessionStorage.removeItem(KEY);
        window.location.assign("/console");
      });
    }
  });
})();
