// The goal editor: add/remove design-space rows, and show a failed save's messages next to
// their fields (live validation fills the same slots through htmx out-of-band swaps).
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
  var data = document.getElementById("goal-errors");
  if (data) {
    var errors = JSON.parse(data.textContent);
    Object.keys(errors).forEach(function (field) {
      var slot = document.getElementById("err-" + field);
      if (slot) slot.textContent = errors[field];
    });
  }
})();
