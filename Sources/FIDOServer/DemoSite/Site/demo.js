// The demo site's only script: on a waiting page, poll the Auth Cloud status endpoint with the status token (no
// access key: the token is the credential) and, once the operation has ended, post the result form so the server
// verifies the result token and renders the outcome.
(function () {
  "use strict";
  var status = document.getElementById("status");
  var form = document.getElementById("result-form");
  if (!status || !form) { return; }
  var token = status.getAttribute("data-status-token");
  var waiting = status.innerHTML;
  var words = { succeeded: "Confirmed on your phone.", failed: "Not confirmed: declined, failed or expired.", cancelled: "Cancelled.",
                unknown: "This request is unknown or has expired.",
                unreachable: "The bank's server does not answer right now. Still trying; your phone's answer is not lost.",
                busy: "The bank's server is busy. Still trying…" };
  function show(state) {
    status.setAttribute("data-state", state);
    if (words[state]) { status.textContent = words[state]; }
  }
  function poll() {
    fetch("/api/v1/status", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ statusToken: token }) })
      .then(function (response) {
        if (response.status === 429 || response.status === 503) { throw new Error("busy"); }
        if (!response.ok && response.status >= 500) { throw new TypeError("server error"); }
        return response.json();
      })
      .then(function (answer) {
        if (answer.status === "pending") {
          // Back after an outage: say so by showing the waiting line again.
          if (status.getAttribute("data-state") !== "pending") { status.setAttribute("data-state", "pending"); status.innerHTML = waiting; }
          setTimeout(poll, 1000);
          return;
        }
        show(answer.status || "unknown");
        form.submit();
      })
      .catch(function (error) {
        // A person waiting must not stare at a spinner while the server is gone: say it, and keep asking.
        show(error && error.message === "busy" ? "busy" : "unreachable");
        setTimeout(poll, 3000);
      });
  }
  poll();
})();

// What both passkey parts share: the FIDO2 API's JSON answers, a refusal's words, the browser's errors, and a new
// passkey made from the options one of the site's endpoints gives (a sign-up, or an account's owner adding one).
var passkeys = (function () {
  "use strict";
  function Refused(lead, detail, code) { this.lead = lead; this.detail = detail; this.code = code; }
  function post(path, body) {
    return fetch(path, { method: "POST", headers: { "Content-Type": "application/json", "Accept": "application/json" }, body: JSON.stringify(body) })
      .then(function (response) {
        return response.json().catch(function () { return { status: "failed", errorMessage: "The server answered " + response.status + "." }; });
      });
  }
  function check(answer, lead) {
    if (answer.status !== "ok") { throw new Refused(lead, answer.errorMessage || answer.message || "", answer.errorCode); }
    return answer;
  }
  function browserError(error) {
    if (error && error.name === "AbortError") { return null; }
    if (error && error.name === "InvalidStateError") { return "This device already has a passkey for this account."; }
    if (error && error.name === "NotAllowedError") { return "Cancelled, or no passkey for this site was chosen."; }
    return (error && error.message) || "The browser could not use the passkey.";
  }
  // What a person reads first; the server's reason, for whoever helps them, below it in small print.
  function say(element, state, text, detail) {
    element.setAttribute("data-state", state);
    element.textContent = text;
    if (detail) {
      var small = document.createElement("span");
      small.className = "detail";
      small.textContent = detail;
      element.appendChild(small);
    }
  }
  function failing(element) {
    return function (error) {
      if (error instanceof Refused) { say(element, "error", error.lead, error.detail); return; }
      var text = browserError(error);
      if (text) { say(element, "error", text); }
    };
  }
  function create(optionsPath, body, refusedLead, mediation, signal) {
    return post(optionsPath, body)
      .then(function (options) {
        check(options, refusedLead);
        var request = { publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) };
        if (mediation) { request.mediation = mediation; }
        if (signal) { request.signal = signal; }
        return navigator.credentials.create(request);
      })
      .then(function (credential) {
        var answer = credential.toJSON();
        answer.userFriendlyName = "Passkey made on the Example Bank site";
        return post("/nevisfido/fido2/attestation/result", answer);
      })
      .then(function (answer) { return check(answer, "The bank did not accept this passkey."); });
  }
  var usable = !!(window.PublicKeyCredential && PublicKeyCredential.parseRequestOptionsFromJSON);
  // WebAuthn binds a passkey to a domain: a page opened by its IP address cannot make or use one.
  var byAddress = /^[0-9.]+$/.test(location.hostname) || location.hostname.indexOf(":") >= 0 || location.hostname.charAt(0) === "[";
  // The Signal API (WebAuthn Level 3): tells the user's passkey provider what the bank knows, where the browser has it.
  function signal(name, argument) {
    if (window.PublicKeyCredential && typeof PublicKeyCredential[name] === "function") {
      PublicKeyCredential[name](argument).catch(function () { /* a hint to the provider; nothing to tell the person */ });
    }
  }
  return {
    post: post, check: check, say: say, failing: failing, create: create, usable: usable, byAddress: byAddress, signal: signal,
    Refused: Refused
  };
})();

// The start page's passkeys: the browser's WebAuthn API against the server's FIDO2 API (nevisFIDO's), with the
// options and answers in their JSON forms (parseCreationOptionsFromJSON, parseRequestOptionsFromJSON, toJSON). On
// the username field's first focus the page keeps one sign-in pending for its autofill (conditional mediation); a
// button aborts it for its own ceremony. A sign-in's session token goes to the result page, which verifies it.
// "Create a passkey" is for a new username only: a customer adds one after signing in, from the result page.
(function () {
  "use strict";
  var card = document.getElementById("passkey-card");
  if (!card) { return; }
  var field = document.getElementById("passkey-username");
  var status = document.getElementById("passkey-status");
  var resultForm = document.getElementById("passkey-result-form");
  var pending = null;
  function say(state, text, detail) { passkeys.say(status, state, text, detail); }
  if (!passkeys.usable || passkeys.byAddress) {
    if (passkeys.byAddress) {
      var there = "https://localhost" + (location.port ? ":" + location.port : "") + location.pathname;
      status.setAttribute("data-state", "error");
      status.textContent = "Passkeys need the site's name, not its address: open ";
      var link = document.createElement("a");
      link.id = "passkey-elsewhere";
      link.href = there;
      link.textContent = there;
      status.appendChild(link);
      status.appendChild(document.createTextNode(" on this computer."));
    } else {
      say("error", "This browser cannot use passkeys here.");
    }
    document.getElementById("passkey-signin").disabled = true;
    document.getElementById("passkey-signup").disabled = true;
    return;
  }
  function cancelPending() { if (pending) { pending.abort(); pending = null; } }
  var used = null, rpId = null;
  function signIn(username, mediation) {
    var controller = new AbortController();
    if (mediation) { pending = controller; }
    return passkeys.post("/nevisfido/fido2/assertion/options", { username: username })
      .then(function (options) {
        passkeys.check(options, "The bank cannot start a passkey sign-in right now.");
        rpId = options.rpId;
        var request = { publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options), signal: controller.signal };
        if (mediation) { request.mediation = mediation; card.setAttribute("data-conditional", "waiting"); }
        return navigator.credentials.get(request);
      })
      .then(function (credential) {
        if (mediation) { card.setAttribute("data-conditional", "answered"); }
        say("waiting", "Checking your passkey…");
        used = credential.id;
        return passkeys.post("/nevisfido/fido2/assertion/result", credential.toJSON());
      })
      .then(function (answer) {
        // A passkey the bank does not have (removed, or made elsewhere): the provider may hide it from now on.
        if (answer.errorCode === "unknown_credential") {
          passkeys.signal("signalUnknownCredential", { rpId: rpId, credentialId: used });
        }
        passkeys.check(answer, "Your passkey did not sign you in.");
        document.getElementById("passkey-token").value = answer.token;
        resultForm.submit();
      });
  }
  var fail = passkeys.failing(status);
  document.getElementById("passkey-signin").addEventListener("click", function () {
    cancelPending();
    say("waiting", "Use your passkey…");
    signIn(field.value.trim(), null).catch(fail);
  });
  document.getElementById("passkey-signup").addEventListener("click", function () {
    var username = field.value.trim();
    if (!username) { say("error", "Choose a username first."); field.focus(); return; }
    cancelPending();
    say("waiting", "Creating a passkey for " + username + "…");
    passkeys.create("/demo/passkey/signup", { username: username }, "No passkey can be made for this username.")
      .then(function () { say("registered", "Passkey created for " + username + ". Sign in with it."); })
      .catch(fail);
  });
  // Autofill starts when the field first gets focus, not on load: each pending request is a challenge the server keeps
  // until it expires, and a page view nobody signs in from should not cost one.
  var offered = false;
  field.addEventListener("focus", function () {
    if (offered || !PublicKeyCredential.isConditionalMediationAvailable) { return; }
    offered = true;
    PublicKeyCredential.isConditionalMediationAvailable().then(function (available) {
      if (available) { signIn("", "conditional").catch(fail); }
    });
  });
})();

// The result page of a sign-in (a phone's log-in or a passkey's): its owner adds a passkey to her own account, with
// the token of the sign-in she just made as the proof the site checks.
(function () {
  "use strict";
  var button = document.getElementById("add-passkey");
  if (!button) { return; }
  var status = document.getElementById("add-passkey-status");
  if (!passkeys.usable) { passkeys.say(status, "error", "This browser cannot use passkeys here."); button.disabled = true; return; }
  var username = button.getAttribute("data-username");
  var upgrading = null;
  button.addEventListener("click", function () {
    if (upgrading) { upgrading.abort(); upgrading = null; }
    passkeys.say(status, "waiting", "Creating a passkey for " + username + "…");
    passkeys.create("/demo/passkey/add", { proof: button.getAttribute("data-proof") }, "No passkey can be added right now.")
      .then(function () { passkeys.say(status, "registered", "Passkey added to " + username + "'s account. Sign in with it next time."); })
      .catch(passkeys.failing(status));
  });
  // After a phone's log-in, the automatic upgrade (conditional create): where the browser offers it, its passkey
  // provider may make a passkey for this account without asking, and tells the person it did. A browser that will
  // not (no saved sign-in to upgrade) refuses quietly; the button stays.
  if (document.getElementById("your-passkeys") || !PublicKeyCredential.getClientCapabilities) { return; }
  PublicKeyCredential.getClientCapabilities().then(function (capabilities) {
    if (!capabilities.conditionalCreate) { return; }
    upgrading = new AbortController();
    button.setAttribute("data-upgrade", "offered");
    return passkeys.create("/demo/passkey/add", { proof: button.getAttribute("data-proof"), conditional: true },
      "No passkey can be added right now.", "conditional", upgrading.signal)
      .then(function () {
        button.setAttribute("data-upgrade", "made");
        passkeys.say(status, "registered", "Your browser added a passkey to " + username + "'s account. Sign in with it next time.");
      });
  }).catch(function () { button.setAttribute("data-upgrade", "declined"); });
})();

// "Your passkeys", after a passkey sign-in: the FIDO2 API's list of the signed-in user's passkeys (the session cookie
// the sign-in set authorizes it), with a name and a remove button for each. After every answer the page tells the
// browser what the bank holds (the Signal API), so her passkey provider shows the names and hides what is gone.
(function () {
  "use strict";
  var list = document.getElementById("passkey-list");
  if (!list) { return; }
  var status = document.getElementById("passkey-list-status");
  var path = "/nevisfido/fido2/passkeys";
  function call(method, url, body) {
    var init = { method: method, headers: { "Accept": "application/json" }, credentials: "same-origin" };
    if (body) { init.headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
    return fetch(url, init).then(function (response) {
      return response.json().catch(function () { return { status: "failed", errorMessage: "The server answered " + response.status + "." }; });
    });
  }
  function when(text) { return text ? new Date(text).toLocaleString() : null; }
  function render(answer) {
    list.textContent = "";
    answer.passkeys.forEach(function (passkey) {
      var item = document.createElement("li");
      item.setAttribute("data-credential-id", passkey.credentialId);
      var name = document.createElement("input");
      name.className = "passkey-name";
      name.maxLength = 64;
      name.value = passkey.name || passkey.providerName || "Passkey";
      name.setAttribute("aria-label", "Name of this passkey");
      var save = document.createElement("button");
      save.type = "button"; save.className = "secondary passkey-rename"; save.textContent = "Rename";
      save.addEventListener("click", function () {
        change("PATCH", passkey.credentialId, { name: name.value.trim() }, "The bank could not rename this passkey.", "Renamed.");
      });
      var remove = document.createElement("button");
      remove.type = "button"; remove.className = "secondary passkey-remove"; remove.textContent = "Remove";
      remove.addEventListener("click", function () {
        change("DELETE", passkey.credentialId, null, "The bank could not remove this passkey.", "Removed.");
      });
      var detail = document.createElement("span");
      detail.className = "detail";
      detail.textContent = (passkey.providerName || "Passkey") + ", added " + when(passkey.createdAt)
        + (passkey.lastUsedAt ? ", last used " + when(passkey.lastUsedAt) : "") + (passkey.backedUp ? ", synced" : "");
      item.appendChild(name); item.appendChild(save); item.appendChild(remove); item.appendChild(detail);
      list.appendChild(item);
    });
    list.setAttribute("data-count", String(answer.passkeys.length));
    if (answer.user) {
      passkeys.signal("signalAllAcceptedCredentials", { rpId: answer.rpId, userId: answer.user.id, allAcceptedCredentialIds: answer.allAcceptedCredentialIds });
      passkeys.signal("signalCurrentUserDetails", { rpId: answer.rpId, userId: answer.user.id, name: answer.user.name, displayName: answer.user.displayName });
    }
  }
  function change(method, id, body, lead, done) {
    passkeys.say(status, "waiting", "One moment…");
    call(method, path + "/" + encodeURIComponent(id), body)
      .then(function (answer) { passkeys.check(answer, lead); render(answer); passkeys.say(status, "registered", done); })
      .catch(passkeys.failing(status));
  }
  call("GET", path)
    .then(function (answer) { passkeys.check(answer, "The bank cannot list your passkeys right now."); render(answer); })
    .catch(passkeys.failing(status));
})();
