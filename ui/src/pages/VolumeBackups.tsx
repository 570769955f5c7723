// The backups of one volume on its detail page: each Backup's snapshot,
// state and progress from the volume's backupStatus (the live volumes
// stream carries it, so a running backup's progress moves on screen).

import { Link } from "react-router";
import type { Volume } from "../api/types";
import { Badge, Progress } from "../components/Widgets";

export function VolumeBackups({ volume }: { volume: Volume }) {
  const list = [...(volume.backupStatus ?? [])].sort((a, b) => (a.id ?? "").localeCompare(b.id ?? ""));
  return (
    <section aria-labelledby="vb-h">
      <div className="section-head">
        <h2 id="vb-h">Backups</h2>
        <Link to="/backup">All backups</Link>
      </div>
      {list.length === 0 ? (
        <p className="empty">No backups of this volume. Back up a snapshot from the tree above.</p>
      ) : (
        <table aria-label={`Backups of ${volume.name}`}>
          <thead>
            <tr>
              <th scope="col">Backup</th>
              <th scope="col">Snapshot</th>
              <th scope="col">State</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {list.map((b) => (
              <tr key={b.id ?? b.snapshot} data-backup={b.id}>
                <td data-label="Backup">{b.id ?? "-"}</td>
                <td data-label="Snapshot">{b.snapshot || "-"}</td>
                <td data-label="State">
                  {b.state === "InProgress" || b.state === "Pending" || b.state === "" ? (
                    <Progress value={b.progress} label={`Backup ${b.id ?? b.snapshot}`} />
                  ) : (
                    <Badge value={b.state} />
                  )}
                </td>
                <td data-label="Error" className="wrap">
                  {b.error || "-"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
