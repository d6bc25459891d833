// GraphiQL for Recall, from the vendored build (static/vendor): no CDN, no inline script.
//
// - It opens on Recall's example query (the page's data-default-query), with the Headers tab
//   open on an Authorization placeholder, or on the token the Messages tab signed in with.
// - It does not fetch the schema while the header is still the placeholder (every request
//   needs a token, so that would only show UNAUTHENTICATED); once a token is pasted it fetches
//   it, and again whenever the token changes.
// - Its editors are kept in localStorage under "recall:" keys, so a query saved by another
//   GraphiQL page on this origin does not replace Recall's. No token is ever kept there:
//   GraphiQL writes each tab's headers into its saved tabs and history whatever
//   shouldPersistHeaders says, so every value is stored with its bearer tokens replaced by the
//   placeholder (and values an older page stored are cleaned on load). "Forget token" clears
//   the token and everything this page and the Messages tab stored.
(function () {
  "use strict";
  var PLACEHOLDER = "PASTE-YOUR-TOKEN";
  var root = document.getElementById("graphiql");
  var note = document.getElementById("recall-note");
  var hint = note.innerHTML;
  var signedIn = null;
  try {
    signedIn = window.sessionStorage.getItem("recall.token");
  } catch (_e) {
    signedIn = null;
  }

  function tokenOf(text) {
    try {
      var headers = JSON.parse(text || "{}");
      var value = headers.Authorization || headers.authorization || "";
      var match = /^\s*Bearer\s+(\S+)\s*$/i.exec(String(value));
      return match && match[1] !== PLACEHOLDER && match[1].indexOf("…") < 0 ? match[1] : null;
    } catch (_e) {
      return null;
    }
  }

  var BEARER = /(Bearer\s+)(?!PASTE-YOUR-TOKEN)[^\s"'\\]+/gi;
  function withoutTokens(value) {
    return typeof value === "string" ? value.replace(BEARER, "$1" + PLACEHOLDER) : value;
  }
  function recallKeys() {
    return Object.keys(window.localStorage).filter(function (key) {
      return key.indexOf("recall:") === 0;
    });
  }
  recallKeys().forEach(function (key) {
    var value = window.localStorage.getItem(key);
    var clean = withoutTokens(value);
    if (clean !== value) window.localStorage.setItem(key, clean);
  });

  var storage = {
    getItem: function (key) {
      return window.localStorage.getItem("recall:" + key);
    },
    setItem: function (key, value) {
      window.localStorage.setItem("recall:" + key, withoutTokens(value));
    },
    removeItem: function (key) {
      window.localStorage.removeItem("recall:" + key);
    },
    clear: function () {
      recallKeys().forEach(function (key) {
        window.localStorage.removeItem(key);
      });
    },
    get length() {
      return window.localStorage.length;
    },
  };

  var defaultHeaders = JSON.stringify(
    { Authorization: "Bearer " + (signedIn || PLACEHOLDER) },
    null,
    2
  );
  // The token in use: none until one is pasted. Headers are not persisted (shouldPersistHeaders
  // is false), so the editor starts from defaultHeaders on every visit.
  var token = tokenOf(defaultHeaders);
  var fetcher = GraphiQL.createFetcher({ url: "/graphql" });
  var pending = null;

  function showNote() {
    if (token) {
      note.className = "recall-note ok";
      note.textContent =
        "Token set in the Headers tab: the schema (Docs, top left) is loaded with it.";
    } else {
      note.className = "recall-note";
      note.innerHTML = hint;
    }
  }

  function onEditHeaders(text) {
    window.clearTimeout(pending);
    pending = window.setTimeout(function () {
      var next = tokenOf(text);
      if (next && next !== token) {
        token = next;
        // A new fetcher makes GraphiQL introspect again, with the headers now in the editor.
        fetcher = GraphiQL.createFetcher({ url: "/graphql" });
        render();
      } else if (!next && token) {
        token = null;
        render();
      }
    }, 400);
  }

  function render() {
    showNote();
    reactRoot.render(
      React.createElement(GraphiQL, {
        fetcher: fetcher,
        // null: no introspection yet; undefined: introspect through the fetcher.
        schema: token ? undefined : null,
        defaultQuery: root.dataset.defaultQuery,
        defaultHeaders: defaultHeaders,
        defaultEditorToolsVisibility: "headers",
        isHeadersEditorEnabled: true,
        shouldPersistHeaders: false,
        storage: storage,
        onEditHeaders: onEditHeaders,
      })
    );
  }

  var forget = document.getElementById("recall-forget");
  forget.hidden = false;
  forget.addEventListener("click", function () {
    try {
      window.sessionStorage.removeItem("recall.token");
    } catch (_e) {
      // storage disabled: nothing was kept
    }
    storage.clear();
    window.location.reload();
  });

  root.textContent = "";
  var reactRoot = ReactDOM.createRoot(root);
  render();
})();
