// The goal editor: add/remove design-space rows, and show each message next to its field, from
// a failed save and from the live check (its JSON), clearing the ones that no longer hold.
(function () {
  "use strict";
  function renumber(table, prefix) {
    table.querySelectorAll("tr.param-row, tr.constraint-row").forEach(function (tr, i) {
      tr.querySelectorAll("[name], [id^=err-]").forEach(function (el) {
        var re = new RegExp("space-" + prefix + "-\\d+-");
        if (el.name) el.name = el.name.replace(re, "space-" + prefix + "-" + i + "-");
        if (el.id) el.id = el.id.replace(re, "space-" + prefix + "-" + i + "-");
      });
    });
  }
  function addRow(tableId, prefix, cls, cells) {
    var table = document.getElementById(tableId);
    var i = table.querySelectorAll("tr." + cls).length;
    var tr = document.createElement("tr");
    tr.className = cls;
    tr.innerHTML = cells(i) + '<td><button type="button" class="secondary" data-remove-row>✕</button></td>';
    table.querySelector("tbody").appendChild(tr);
    var first = tr.querySelector("input");
    if (first) first.focus();
  }
  document.addEventListener("click", function (e) {
    var t = e.target;
    if (t.id === "add-constraint") {
      addRow("space-constraints", "c", "constraint-row", function (i) {
        return '<td><input type="text" name="space-c-' + i + '-expr" aria-label="constraint">' +
          '<div class="errorlist" id="err-space-c-' + i + '-expr"></div></td>' +
          '<td><input type="text" name="space-c-' + i + '-message"></td>';
      });
    } else if (t.id === "add-param") {
      addRow("space-params", "p", "param-row", function (i) {
        var n = "space-p-" + i + "-";
        return '<td><input type="text" name="' + n + 'name" aria-label="param name"><div class="errorlist" id="err-' + n + 'name"></div></td>' +
          '<td><select name="' + n + 'kind"><option>int</option><option>choice</option><option>bool</option><option>variant</option></select></td>' +
          '<td><input type="text" name="' + n + 'low" size="4"></td>' +
          '<td><input type="text" name="' + n + 'high" size="4"><div class="errorlist" id="err-' + n + 'high"></div></td>' +
          '<td><input type="text" name="' + n + 'step" size="3"></td>' +
          '<td><input type="text" name="' + n + 'choices"><div class="errorlist" id="err-' + n + 'choices"></div></td>';
      });
    } else if (t.hasAttribute && t.hasAttribute("data-remove-row")) {
      var tr = t.closest("tr"), table = t.closest("table");
      tr.remove();
      renumber(table, table.id === "space-params" ? "p" : "c");
      document.getElementById("goal-form").dispatchEvent(new Event("change", {bubbles: true}));
    }
  });
  // Every message goes to its field's slot; slots without a message are cleared (a message
  // for a field with no slot on the page goes to the goal's own slot, never nowhere).
  function showErrors(errors) {
    var unplaced = [];
    document.querySelectorAll("#goal-form .errorlist[id^=err-]").forEach(function (slot) { slot.textContent = ""; });
    Object.keys(errors).forEach(function (field) {
      var slot = document.getElementById("err-" + field);
      if (slot && field !== "goal") slot.textContent = errors[field]; else unplaced.push(errors[field]);
    });
    document.getElementById("err-goal").textContent = unplaced.join(" ");
  }
  function fromScript(id) { var el = document.getElementById(id); return el ? JSON.parse(el.textContent) : null; }
  var initial = fromScript("goal-errors");
  if (initial) showErrors(initial);
  var form = document.getElementById("goal-form"), summary = document.getElementById("validation");
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target === summary) {
      var errors = fromScript("validation-errors");
      if (errors) showErrors(errors);
    } else if (e.detail.target.id === "space-editor") {
      // another workload's (or target's) space: check again, with its rows, and drop old messages
      showErrors({});
      htmx.trigger("#live-check", "revalidate");
    }
  });
  function failed(e) {
    if (e.detail.elt.id !== "live-check") return;
    var status = e.detail.xhr && e.detail.xhr.status;
    summary.innerHTML = '<span class="error" id="check-failed"></span>';
    summary.firstChild.textContent = status ? "The check failed on the server (" + status + "): this goal is not known to run; try again."
                                            : "The check could not reach the server: this goal is not known to run; try again.";
  }
  document.body.addEventListener("htmx:responseError", failed);
  document.body.addEventListener("htmx:sendError", failed);
  form.querySelectorAll("select[name=workload], select[name=target]").forEach(function (sel) {
    sel.addEventListener("change", function () { summary.innerHTML = '<span class="muted">Checking…</span>'; });
  });
})();
