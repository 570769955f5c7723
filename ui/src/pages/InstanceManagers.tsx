// Instance managers: one per node and data engine, with the engine and
// replica processes each runs.

import { useCollection } from "../api/live";
import type { InstanceManager } from "../api/types";
import { Table, type Column } from "../components/Table";
import { Badge, Loading } from "../components/Widgets";

const count = (m: Record<string, unknown> | null | undefined) => Object.keys(m ?? {}).length;

const columns: Column<InstanceManager>[] = [
  { key: "state", header: "State", render: (im) => <Badge value={im.currentState || "unknown"} />, sortValue: (im) => im.currentState },
  { key: "name", header: "Name", render: (im) => im.name, sortValue: (im) => im.name },
  { key: "node", header: "Node", render: (im) => im.nodeID, sortValue: (im) => im.nodeID },
  { key: "type", header: "Type", render: (im) => im.managerType || "-", sortValue: (im) => im.managerType },
  { key: "engine", header: "Data engine", render: (im) => im.dataEngine || "-", sortValue: (im) => im.dataEngine ?? "" },
  { key: "ip", header: "IP", render: (im) => im.ip || "-", sortValue: (im) => im.ip ?? "" },
  { key: "engines", header: "Engines", render: (im) => count(im.instanceEngines), sortValue: (im) => count(im.instanceEngines), className: "num" },
  { key: "replicas", header: "Replicas", render: (im) => count(im.instanceReplicas), sortValue: (im) => count(im.instanceReplicas), className: "num" },
  { key: "image", header: "Image", render: (im) => <code>{im.image}</code>, sortValue: (im) => im.image },
];

export function InstanceManagersPage() {
  const ims = useCollection("instancemanagers");
  return (
    <div className="page">
      <h1>Instance Managers</h1>
      <Loading state={ims} what="instance managers">
        {(list) => <Table label="instance managers" rows={list} columns={columns} rowKey={(im) => im.name} initialSort={{ key: "node" }} empty="No instance managers." />}
      </Loading>
    </div>
  );
}
