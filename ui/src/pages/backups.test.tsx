import { act, screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { Backup, BackupTarget, BackupVolume } from "../api/types";
import { installFetch, installStreams, type FakeStreams } from "../test/fakes";
import { attached, snap } from "../test/fixtures";
import { renderAt } from "../test/render";
import { pollSeconds } from "./backupDialogs";

let streams: FakeStreams;
beforeEach(() => {
  streams = installStreams();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

function target(name: string, over: Partial<BackupTarget> = {}): BackupTarget {
  return { id: name, type: "backupTarget", name, backupTargetURL: "s3://backups@us-east-1/", credentialSecret: "", pollInterval: "5m0s", available: true, message: "", ...over };
}

function backupVolume(volume: string, over: Partial<BackupVolume> = {}): BackupVolume {
  return { id: volume, type: "backupVolume", name: volume, volumeName: volume, backupTargetName: "default", size: String(1024 ** 3), created: "", lastBackupName: "", lastBackupAt: "", ...over };
}

function backup(name: string, volume: string, over: Partial<Backup> = {}): Backup {
  return {
    id: name, type: "backup", name, state: "Completed", progress: 100, error: "", url: `s3://backups@us-east-1/?backup=${name}&volume=${volume}`,
    snapshotName: "s1", snapshotCreated: "", created: "2026-12-01T10:00:00Z", size: "4096", volumeName: volume, volumeSize: String(1024 ** 3),
    backupTargetName: "default", ...over,
  };
}

describe("Backups page", () => {
  it("shows targets, backup volumes and a volume's backups with live progress", async () => {
    const user = userEvent.setup({ delay: null });
    renderAt("/backup");
    act(() => {
      streams.feed("backuptargets", [target("default"), target("nfs", { backupTargetURL: "nfs://h:/e", available: false, message: "mount failed" })]);
      streams.feed("backupvolumes", [backupVolume("vol")]);
      streams.feed("backups", [backup("backup-a", "vol"), backup("backup-b", "vol", { state: "InProgress", progress: 30 }), backup("backup-c", "other")]);
    });
    const targets = screen.getByRole("table", { name: "backup targets" });
    expect(within(targets).getByText("mount failed")).toBeInTheDocument();
    expect(within(targets).getByRole("button", { name: "Delete backup target default" })).toBeDisabled();
    await user.click(screen.getByRole("button", { name: /vol/, expanded: false }));
    const list = screen.getByRole("table", { name: "backups of vol" });
    expect(within(list).getAllByRole("row")).toHaveLength(3);
    expect(within(list).getByRole("progressbar", { name: "Backup backup-b" })).toHaveAttribute("aria-valuenow", "30");
    act(() => streams.feed("backups", [backup("backup-a", "vol"), backup("backup-b", "vol", { state: "InProgress", progress: 80 })]));
    expect(within(list).getByRole("progressbar", { name: "Backup backup-b" })).toHaveAttribute("aria-valuenow", "80");
  });

  it("creates and syncs a backup target and shows the API's message", async () => {
    const user = userEvent.setup({ delay: null });
    const calls = installFetch((method, path) =>
      method === "POST" && path === "backuptargets" ? [422, { type: "error", status: 422, code: "InvalidInput", message: 'backupTargetURL: scheme "ftp" is not one of s3, nfs, vfs' }] : [200, {}],
    );
    renderAt("/backup");
    act(() => {
      streams.feed("backuptargets", [target("default")]);
      streams.feed("backupvolumes", []);
      streams.feed("backups", []);
    });
    await user.click(screen.getByRole("button", { name: "Sync backup target default" }));
    await waitFor(() => expect(calls[0]).toMatchObject({ method: "POST", url: "backuptargets/default?action=backupTargetSync", body: { syncBackupTarget: true } }));
    await user.click(screen.getByRole("button", { name: "Create Backup Target" }));
    const dialog = screen.getByRole("dialog", { name: "Create backup target" });
    await user.type(within(dialog).getByLabelText("Name"), "second");
    await user.type(within(dialog).getByLabelText("URL"), "ftp://x");
    await user.clear(within(dialog).getByLabelText("Poll interval (seconds)"));
    await user.type(within(dialog).getByLabelText("Poll interval (seconds)"), "soon");
    expect(within(dialog).getByRole("button", { name: "Create" })).toBeDisabled();
    await user.clear(within(dialog).getByLabelText("Poll interval (seconds)"));
    await user.type(within(dialog).getByLabelText("Poll interval (seconds)"), "60");
    await user.click(within(dialog).getByRole("button", { name: "Create" }));
    expect(await within(dialog).findByText(/is not one of s3, nfs, vfs/)).toBeInTheDocument();
    expect(calls[1]).toMatchObject({ method: "POST", url: "backuptargets", body: { name: "second", backupTargetURL: "ftp://x", pollInterval: "60" } });
  });

  it("asks before deleting a backup and sends backupDelete to its backup volume", async () => {
    const user = userEvent.setup({ delay: null });
    const calls = installFetch(() => [200, {}]);
    renderAt("/backup");
    act(() => {
      streams.feed("backuptargets", [target("default")]);
      streams.feed("backupvolumes", [backupVolume("vol")]);
      streams.feed("backups", [backup("backup-a", "vol")]);
    });
    await user.click(screen.getByRole("button", { name: /vol/, expanded: false }));
    await user.click(screen.getByRole("button", { name: "Delete backup backup-a" }));
    expect(calls).toHaveLength(0);
    await user.click(within(screen.getByRole("dialog", { name: "Delete backup backup-a?" })).getByRole("button", { name: "Delete" }));
    await waitFor(() => expect(calls[0]).toMatchObject({ method: "POST", url: "backupvolumes/vol?action=backupDelete", body: { name: "backup-a" } }));
  });
});

describe("Create backup from the snapshot tree", () => {
  it("backs up a snapshot after confirmation and shows the volume's backup progress", async () => {
    const user = userEvent.setup({ delay: null });
    const calls = installFetch((_m, path) => {
      if (path.includes("action=snapshotList")) return [200, { type: "collection", data: [snap("s1", ""), snap("volume-head", "s1", { usercreated: false })] }];
      return [200, {}];
    });
    renderAt("/volume/vol");
    const v = attached("vol");
    v.actions = { ...v.actions, snapshotBackup: "" };
    act(() => streams.feed("volumes", [v]));
    act(() => streams.feed("events", []));
    expect(screen.getByText(/No backups of this volume/)).toBeInTheDocument();
    const tree = await screen.findByRole("tree", { name: "Snapshots of vol" });
    await user.click(within(tree).getByRole("button", { name: "Back up snapshot s1" }));
    const dialog = screen.getByRole("dialog", { name: "Back up snapshot s1?" });
    expect(dialog).toHaveTextContent('backup target "default"');
    await user.click(within(dialog).getByRole("button", { name: "Create Backup" }));
    await waitFor(() => expect(calls.find((c) => c.url === "volumes/vol?action=snapshotBackup")?.body).toEqual({ name: "s1" }));
    act(() => streams.feed("volumes", [{ ...v, backupStatus: [{ id: "backup-1", snapshot: "s1", progress: 45, state: "InProgress", error: "" }] }]));
    expect(screen.getByRole("progressbar", { name: "Backup backup-1" })).toHaveAttribute("aria-valuenow", "45");
  });

  it("disables Back up when the volume does not offer it", async () => {
    installFetch((_m, path) => (path.includes("action=snapshotList") ? [200, { type: "collection", data: [snap("s1", ""), snap("volume-head", "s1")] }] : [200, {}]));
    renderAt("/volume/vol");
    act(() => streams.feed("volumes", [attached("vol")]));
    act(() => streams.feed("events", []));
    const tree = await screen.findByRole("tree");
    expect(within(tree).getByRole("button", { name: "Back up snapshot s1" })).toBeDisabled();
  });
});

describe("pollSeconds", () => {
  it("turns Go durations into seconds", () => {
    expect(pollSeconds("5m0s")).toBe("300");
    expect(pollSeconds("1h0m0s")).toBe("3600");
    expect(pollSeconds("0s")).toBe("0");
    expect(pollSeconds("")).toBe("300");
  });
});

describe("Restore", () => {
  it("restores a completed backup to a new volume, or as a standby volume", async () => {
    const user = userEvent.setup({ delay: null });
    const calls = installFetch(() => [200, {}]);
    renderAt("/backup");
    act(() => {
      streams.feed("backuptargets", [target("default")]);
      streams.feed("backupvolumes", [backupVolume("vol")]);
      streams.feed("backups", [backup("backup-a", "vol"), backup("backup-b", "vol", { state: "InProgress", progress: 10 })]);
    });
    await user.click(screen.getByRole("button", { name: /vol/, expanded: false }));
    expect(screen.getByRole("button", { name: "Restore backup backup-b" })).toBeDisabled();
    await user.click(screen.getByRole("button", { name: "Restore backup backup-a" }));
    let dialog = screen.getByRole("dialog", { name: "Restore backup backup-a" });
    await user.click(within(dialog).getByRole("button", { name: "Restore" }));
    await waitFor(() =>
      expect(calls[0]).toMatchObject({ method: "POST", url: "volumes", body: { name: "vol-restore", fromBackup: backup("backup-a", "vol").url, frontend: "blockdev", size: String(1024 ** 3) } }),
    );
    await user.click(screen.getByRole("button", { name: "Restore backup backup-a" }));
    dialog = screen.getByRole("dialog", { name: "Restore backup backup-a" });
    await user.clear(within(dialog).getByLabelText("New volume name"));
    await user.type(within(dialog).getByLabelText("New volume name"), "vol-dr");
    await user.click(within(dialog).getByLabelText(/Disaster recovery volume/));
    await user.click(within(dialog).getByRole("button", { name: "Restore" }));
    await waitFor(() => expect(calls[1]).toMatchObject({ body: { name: "vol-dr", standby: true, frontend: "" } }));
  });
});
