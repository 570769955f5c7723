// Dashboard: volumes by health, storage of all nodes, nodes by status,
// and the latest events.

import { Link } from "react-router";
import { useCollection } from "../api/live";
import { Donut, Loading } from "../components/Widgets";
import { formatBytes } from "../lib/format";
import { nodeStatus, storageOf } from "../lib/nodes";
import { countByHealth } from "../lib/volume";
import { EventTable } from "./Events";

export function Dashboard() {
  const volumes = useCollection("volumes");
  const nodes = useCollection("nodes");
  const events = useCollection("events");
  return (
    <div className="page">
      <h1>Dashboard</h1>
      <div className="cards">
        <section className="card" aria-label="Volumes">
          <Loading state={volumes} what="volumes">
            {(vs) => {
              const c = countByHealth(vs);
              const inProgress = c.attaching + c.detaching + c.creating + c.deleting;
              return (
                <Link to="/volume" className="card-link">
                  <Donut
                    title="Volumes"
                    center={String(vs.length)}
                    slices={[
                      { label: "Healthy", value: c.healthy, tone: "ok" },
                      { label: "Degraded", value: c.degraded, tone: "warn" },
                      { label: "In progress", value: inProgress, tone: "info" },
                      { label: "Fault", value: c.faulted, tone: "bad" },
                      { label: "Detached", value: c.detached + c.unknown, tone: "muted" },
                    ]}
                  />
                </Link>
              );
            }}
          </Loading>
        </section>
        <section className="card" aria-label="Storage">
          <Loading state={nodes} what="nodes">
            {(ns) => {
              const s = storageOf(ns);
              return (
                <Link to="/node" className="card-link">
                  <Donut
                    title="Storage"
                    center={formatBytes(s.total)}
                    slices={[
                      { label: `Schedulable ${formatBytes(s.schedulable)}`, value: s.schedulable, tone: "ok", display: "" },
                      { label: `Reserved ${formatBytes(s.reserved)}`, value: s.reserved, tone: "info", display: "" },
                      { label: `Used ${formatBytes(s.used)}`, value: s.used, tone: "warn", display: "" },
                      { label: `Disabled ${formatBytes(s.disabled)}`, value: s.disabled, tone: "muted", display: "" },
                    ]}
                  />
                  <p className="caption">Scheduled to replicas: {formatBytes(s.scheduled)}</p>
                </Link>
              );
            }}
          </Loading>
        </section>
        <section className="card" aria-label="Nodes">
          <Loading state={nodes} what="nodes">
            {(ns) => {
              const by = { schedulable: 0, unschedulable: 0, disabled: 0, down: 0 };
              for (const n of ns) by[nodeStatus(n)]++;
              return (
                <Link to="/node" className="card-link">
                  <Donut
                    title="Nodes"
                    center={String(ns.length)}
                    slices={[
                      { label: "Schedulable", value: by.schedulable, tone: "ok" },
                      { label: "Unschedulable", value: by.unschedulable, tone: "warn" },
                      { label: "Disabled", value: by.disabled, tone: "muted" },
                      { label: "Down", value: by.down, tone: "bad" },
                    ]}
                  />
                </Link>
              );
            }}
          </Loading>
        </section>
      </div>
      <section aria-label="Recent events">
        <h2>Recent events</h2>
        <Loading state={events} what="events">
          {(es) => <EventTable events={es} limit={10} />}
        </Loading>
      </section>
    </div>
  );
}
