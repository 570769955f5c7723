// Engine images: state, version, where deployed, how many volumes use each;
// deploy a new one, delete an unused one.

import { useState } from "react";
import { api } from "../api/client";
import { useCollection } from "../api/live";
import type { EngineImage } from "../api/types";
import { Confirm, Dialog } from "../components/Dialog";
import { Table, type Column } from "../components/Table";
import { useAction } from "../components/useAction";
import { Badge, Field, Loading } from "../components/Widgets";
import { formatTime } from "../lib/format";

function deployed(ei: EngineImage): string {
  const m = ei.nodeDeploymentMap ?? {};
  const all = Object.keys(m).length;
  return all ? `${Object.values(m).filter(Boolean).length} / ${all}` : "-";
}

export function EngineImagesPage() {
  const images = useCollection("engineimages");
  const [adding, setAdding] = useState(false);
  const [deleting, setDeleting] = useState<EngineImage | null>(null);
  const { busy, run } = useAction();
  const columns: Column<EngineImage>[] = [
    { key: "state", header: "State", render: (e) => <Badge value={e.state || "unknown"} />, sortValue: (e) => e.state ?? "" },
    { key: "image", header: "Image", render: (e) => <code>{e.image}</code>, sortValue: (e) => e.image },
    { key: "default", header: "Default", render: (e) => (e.default ? "yes" : "no"), sortValue: (e) => String(!!e.default) },
    { key: "ref", header: "Volumes", render: (e) => e.refCount ?? 0, sortValue: (e) => e.refCount ?? 0, className: "num" },
    { key: "version", header: "Version", render: (e) => e.version || "-", sortValue: (e) => e.version ?? "" },
    { key: "api", header: "API (CLI / controller / data)", render: (e) => `${e.cliAPIVersion ?? "-"} / ${e.controllerAPIVersion ?? "-"} / ${e.dataFormatVersion ?? "-"}` },
    { key: "nodes", header: "Deployed on", render: deployed },
    { key: "built", header: "Build date", render: (e) => formatTime(e.buildDate), sortValue: (e) => e.buildDate ?? "" },
    {
      key: "ops",
      header: "Operation",
      render: (e) => (
        <button type="button" className="small danger" disabled={!!e.default || (e.refCount ?? 0) > 0} onClick={() => setDeleting(e)} aria-label={`Delete engine image ${e.name}`}>
          Delete
        </button>
      ),
    },
  ];
  const remove = async () => {
    if (!deleting) return;
    await run(`Delete engine image ${deleting.name}`, () => api.remove("engineimages", deleting.name), `Engine image ${deleting.name} deleted`);
    setDeleting(null);
  };
  return (
    <div className="page">
      <h1>Engine Images</h1>
      <Loading state={images} what="engine images">
        {(eis) => (
          <Table
            label="engine images"
            rows={eis}
            columns={columns}
            rowKey={(e) => e.name}
            initialSort={{ key: "image" }}
            empty="No engine images."
            toolbar={
              <button type="button" className="primary" onClick={() => setAdding(true)}>
                Deploy Engine Image
              </button>
            }
          />
        )}
      </Loading>
      {adding && <AddImage onClose={() => setAdding(false)} />}
      {deleting && <Confirm title={`Delete engine image ${deleting.name}?`} message={`${deleting.image} is removed from every node.`} confirmLabel="Delete" busy={busy} onConfirm={remove} onCancel={() => setDeleting(null)} />}
    </div>
  );
}

function AddImage({ onClose }: { onClose: () => void }) {
  const [image, setImage] = useState("");
  const { busy, error, run } = useAction();
  const submit = async () => {
    const ok = await run("Deploy engine image", () => api.create("engineimages", { image }), `Deploying ${image}`);
    if (ok !== undefined) onClose();
  };
  return (
    <Dialog
      title="Deploy Engine Image"
      onClose={onClose}
      footer={
        <>
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" disabled={busy || image === ""} onClick={submit}>
            Deploy
          </button>
        </>
      }
    >
      <Field label="Image" htmlFor="ei-image" hint="e.g. longhornio/longhorn:v1.2.3" error={error}>
        <input id="ei-image" value={image} onChange={(e) => setImage(e.target.value)} />
      </Field>
    </Dialog>
  );
}
