/* Sortable tables: a <table data-sortable> whose header cells hold a <button class="sort">.
   Activating a button (click, Enter or Space) sorts the body rows by that column, ascending
   first, then the other way; aria-sort on the header cell tells assistive technology the
   order, and the element named by data-status announces it. A cell sorts by its data-value
   when it has one, else by its text; header cells with data-type="number" compare numbers.
   Empty values go last in both directions. No dependencies, no network calls. */
(function () {
  "use strict";

  function key(cell, numeric) {
    const raw = (cell.dataset.value !== undefined ? cell.dataset.value : cell.textContent).trim();
    if (raw === "") return null;
    return numeric ? Number(raw) : raw.toLocaleLowerCase();
  }

  function compare(a, b, numeric) {
    return numeric ? a - b : a.localeCompare(b);
  }

  function sortBody(body, index, numeric, descending) {
    const rows = Array.from(body.rows).map(function (row, position) {
      return { row: row, key: key(row.cells[index], numeric), position: position };
    });
    rows.sort(function (a, b) {
      if (a.key === null || b.key === null) {
        return (a.key === null) - (b.key === null) || a.position - b.position;
      }
      const order = compare(a.key, b.key, numeric);
      return (descending ? -order : order) || a.position - b.position;
    });
    rows.forEach(function (item) { body.appendChild(item.row); });
  }

  function setUp(table) {
    const headers = Array.from(table.tHead.rows[0].cells);
    const status = document.getElementById(table.dataset.status || "");
    headers.forEach(function (header, index) {
      const button = header.querySelector("button.sort");
      if (!button) return;
      button.addEventListener("click", function () {
        const descending = header.getAttribute("aria-sort") === "ascending";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        header.setAttribute("aria-sort", descending ? "descending" : "ascending");
        sortBody(table.tBodies[0], index, header.dataset.type === "number", descending);
        if (status) {
          status.textContent = "Sorted by " + button.textContent + (descending ? ", descending." : ", ascending.");
        }
      });
    });
  }

  document.querySelectorAll("table[data-sortable]").forEach(setUp);
})();
