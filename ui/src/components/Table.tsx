// A data table: click a header to sort (again to reverse), a text filter
// over the columns' text, optional row selection for bulk actions.

import { useMemo, useState, type ReactNode } from "react";

export interface Column<T> {
  key: string;
  header: string;
  render: (row: T) => ReactNode;
  /** sortValue orders rows; without it the column does not sort. */
  sortValue?: (row: T) => string | number;
  /** filterText is what the filter box matches (default: sortValue as text). */
  filterText?: (row: T) => string;
  className?: string;
}

interface Props<T> {
  label: string;
  rows: T[];
  columns: Column<T>[];
  rowKey: (row: T) => string;
  initialSort?: { key: string; desc?: boolean };
  filterPlaceholder?: string;
  selected?: Set<string>;
  onSelect?: (s: Set<string>) => void;
  empty?: ReactNode;
  toolbar?: ReactNode;
}

export function compareValues(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: "base" });
}

/** sortRows is the table's order: by the column, then by key for ties. */
export function sortRows<T>(rows: T[], col: Column<T> | undefined, desc: boolean, rowKey: (r: T) => string): T[] {
  const out = [...rows];
  if (!col?.sortValue) return out.sort((a, b) => compareValues(rowKey(a), rowKey(b)));
  const sv = col.sortValue;
  return out.sort((a, b) => {
    const d = compareValues(sv(a), sv(b));
    return (desc ? -d : d) || compareValues(rowKey(a), rowKey(b));
  });
}

/** filterRows keeps rows where any column's text contains every word of q. */
export function filterRows<T>(rows: T[], columns: Column<T>[], q: string): T[] {
  const words = q.toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) return rows;
  return rows.filter((r) => {
    const text = columns
      .map((c) => (c.filterText ? c.filterText(r) : c.sortValue ? String(c.sortValue(r)) : ""))
      .join(" ")
      .toLowerCase();
    return words.every((w) => text.includes(w));
  });
}

export function Table<T>({ label, rows, columns, rowKey, initialSort, filterPlaceholder, selected, onSelect, empty, toolbar }: Props<T>) {
  const [sortKey, setSortKey] = useState(initialSort?.key ?? "");
  const [desc, setDesc] = useState(!!initialSort?.desc);
  const [q, setQ] = useState("");
  const shown = useMemo(() => {
    const col = columns.find((c) => c.key === sortKey);
    return sortRows(filterRows(rows, columns, q), col, desc, rowKey);
  }, [rows, columns, q, sortKey, desc, rowKey]);
  const sortBy = (key: string) => {
    if (key === sortKey) setDesc(!desc);
    else {
      setSortKey(key);
      setDesc(false);
    }
  };
  const allSelected = !!selected && shown.length > 0 && shown.every((r) => selected.has(rowKey(r)));
  const toggleAll = () => onSelect?.(allSelected ? new Set() : new Set(shown.map(rowKey)));
  const toggle = (k: string) => {
    if (!selected || !onSelect) return;
    const s = new Set(selected);
    if (s.has(k)) s.delete(k);
    else s.add(k);
    onSelect(s);
  };
  return (
    <div className="table-wrap">
      <div className="toolbar">
        {toolbar}
        <input
          type="search"
          className="filter"
          aria-label={`Filter ${label}`}
          placeholder={filterPlaceholder ?? "Filter"}
          value={q}
          onChange={(e) => setQ(e.target.value)}
        />
      </div>
      <div className="scroll-x">
        <table aria-label={label}>
          <thead>
            <tr>
              {selected && (
                <th className="check">
                  <input type="checkbox" aria-label={`Select all ${label}`} checked={allSelected} onChange={toggleAll} />
                </th>
              )}
              {columns.map((c) => (
                <th key={c.key} className={c.className} aria-sort={sortKey === c.key ? (desc ? "descending" : "ascending") : undefined}>
                  {c.sortValue ? (
                    <button type="button" className="sort" onClick={() => sortBy(c.key)}>
                      {c.header}
                      <span aria-hidden="true">{sortKey === c.key ? (desc ? " ▼" : " ▲") : ""}</span>
                    </button>
                  ) : (
                    c.header
                  )}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {shown.map((r) => {
              const k = rowKey(r);
              return (
                <tr key={k} className={selected?.has(k) ? "selected" : undefined}>
                  {selected && (
                    <td className="check">
                      <input type="checkbox" aria-label={`Select ${k}`} checked={selected.has(k)} onChange={() => toggle(k)} />
                    </td>
                  )}
                  {columns.map((c) => (
                    <td key={c.key} className={c.className} data-label={c.header}>
                      {c.render(r)}
                    </td>
                  ))}
                </tr>
              );
            })}
            {shown.length === 0 && (
              <tr>
                <td colSpan={columns.length + (selected ? 1 : 0)} className="empty">
                  {rows.length === 0 ? (empty ?? "Nothing here yet.") : "No rows match the filter."}
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </div>
  );
}
