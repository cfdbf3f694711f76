// kh-review console: keeps the bearer token in this tab's sessionStorage and sends it as
// Authorization with every htmx request. No cookies. A link of the form /console#token=...
// leaves the address bar at once, and signs in only after the user has seen whose token it
// is (its sub and roles, read here for display only) and clicked to confirm; a tab that
// already holds a token ignores such links (sign out first). Someone else's link must never
// make the next drafts theirs.
(function () {
  "use strict";
  var KEY = "kh-review-token";
  // On load, and when a link changes only the fragment of a console page already open.
  function takeLink() {
    var m = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
    if (m) {
      history.replaceState(null, "", window.location.pathname + window.location.search);
      offerLink(decodeURIComponent(m[1]));
    }
  }
  takeLink();
  window.addEventListener("hashchange", takeLink);

  // The claims of a JWT, unverified (display only: the service checks every request).
  function claimsOf(token) {
    try {
      var part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      var text = decodeURIComponent(Array.prototype.map.call(atob(part), function (c) {
        return "%" + ("0" + c.charCodeAt(0).toString(16)).slice(-2);
      }).join(""));
      var claims = JSON.parse(text);
      return claims && typeof claims.sub === "string" ? claims : null;
    } catch (e) {
      return null;
    }
  }

  function panel(id, lines) {
    ["link-sign-in", "link-refused"].forEach(function (old) {
      var e = document.getElementById(old);
      if (e) e.remove();
    });
    var box = document.createElement("section");
    box.id = id;
    box.className = "alert";
    box.setAttribute("role", "alert");
    lines.forEach(function (line) {
      var p = document.createElement("p");
      p.textContent = line;
      box.appendChild(p);
    });
    var main = document.getElementById("main") || document.body;
    var title = main.querySelector("h1");
    main.insertBefore(box, title ? title.nextSibling : main.firstChild);
    return box;
  }

  function button(box, id, label, onClick) {
    var b = document.createElement("button");
    b.type = "button";
    b.id = id;
    b.textContent = label;
    b.addEventListener("click", onClick);
    box.appendChild(b);
    return b;
  }

  function offerLink(token) {
    if (sessionStorage.getItem(KEY)) {
      if (sessionStorage.getItem(KEY) !== token) {
        panel("link-refused", ["A sign-in link was ignored: this tab is already signed in. " +
          "Sign out first to use another token."]);
      }
      return;
    }
    var claims = claimsOf(token);
    if (!claims) {
      panel("link-refused", ["The sign-in link's token cannot be read; nothing was changed."]);
      return;
    }
    var roles = Array.isArray(claims.roles) ? claims.roles.join(", ") : "none in roles";
    var box = panel("link-sign-in", [
      "This link signs this tab in as " + claims.sub + " (roles: " + roles + ").",
      "Everything you do here would then be done as " + claims.sub +
        ". Continue only if the link is meant for you."]);
    button(box, "link-confirm", "Sign in as " + claims.sub, function () {
      sessionStorage.setItem(KEY, token);
      box.remove();
      document.body.dispatchEvent(new Event("kh:signed-in"));
    });
    button(box, "link-cancel", "Cancel", function () {
      box.remove();
    });
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
