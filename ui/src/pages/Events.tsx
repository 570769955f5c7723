// Events: the Kubernetes events of Longhorn's objects (/v1/events).

import { useCollection } from "../api/live";
import type { LonghornEvent } from "../api/types";
import { Table, type Column } from "../components/Table";
import { Badge, Loading } from "../components/Widgets";
import { ago, formatTime, parseTime } from "../lib/format";

function eventTime(e: LonghornEvent): string {
  const k = e.event ?? {};
  return k.lastTimestamp || k.eventTime || k.firstTimestamp || k.metadata?.creationTimestamp || "";
}

const columns: Column<LonghornEvent>[] = [
  { key: "time", header: "Last seen", render: (e) => <time title={formatTime(eventTime(e))}>{ago(eventTime(e))} ago</time>, sortValue: (e) => parseTime(eventTime(e)) || 0 },
  { key: "type", header: "Type", render: (e) => <Badge value={e.event?.type ?? e.eventType ?? ""} />, sortValue: (e) => e.event?.type ?? e.eventType ?? "" },
  { key: "reason", header: "Reason", render: (e) => e.event?.reason ?? "", sortValue: (e) => e.event?.reason ?? "" },
  {
    key: "object",
    header: "Object",
    render: (e) => `${(e.event?.involvedObject?.kind ?? "").toLowerCase()}/${e.event?.involvedObject?.name ?? ""}`,
    sortValue: (e) => `${e.event?.involvedObject?.kind ?? ""}/${e.event?.involvedObject?.name ?? ""}`,
  },
  { key: "message", header: "Message", render: (e) => e.event?.message ?? "", filterText: (e) => e.event?.message ?? "", className: "wrap" },
  { key: "count", header: "Count", render: (e) => e.event?.count ?? 1, sortValue: (e) => e.event?.count ?? 1, className: "num" },
  { key: "source", header: "Source", render: (e) => e.event?.source?.host || e.event?.source?.component || "", sortValue: (e) => e.event?.source?.host || e.event?.source?.component || "" },
];

/** EventTable lists events newest first; limit shows only the newest few. */
export function EventTable({ events, limit, filter }: { events: LonghornEvent[]; limit?: number; filter?: (e: LonghornEvent) => boolean }) {
  let rows = filter ? events.filter(filter) : events;
  if (limit) rows = [...rows].sort((a, b) => (parseTime(eventTime(b)) || 0) - (parseTime(eventTime(a)) || 0)).slice(0, limit);
  return <Table label="events" rows={rows} columns={columns} rowKey={(e) => e.id} initialSort={{ key: "time", desc: true }} empty="No events." />;
}

export function EventsPage() {
  const events = useCollection("events");
  return (
    <div className="page">
      <h1>Events</h1>
      <Loading state={events} what="events">
        {(es) => <EventTable events={es} />}
      </Loading>
    </div>
  );
}
