#!/usr/bin/env bash
# Writes testdata/longhorn-fixture: a backupstore in Longhorn's format, made
# by hand from the documented layout (backupstore/volumes/<h0:2>/<h2:4>/<vol>/
# volume.cfg, backups/backup_<name>.cfg, blocks/<c0:2>/<c2:4>/<c>.blk) with
# python3's hashlib/json/gzip and the lz4 command line tool (lz4 frame format,
# as pierrec/lz4 writes it for Longhorn). Nothing of this package is used, so
# the fixture checks our reader against the format, not against our writer.
# Also writes testdata/longhorn-fixture.expected: "<volume> <backup> <sha256 of
# the restored volume>" per backup. Run from engine/backupstore: the output is
# committed; re-running gives identical files.
set -euo pipefail
cd "$(dirname "$0")"
out=longhorn-fixture
rm -rf "$out" "$out.expected"
python3 - "$out" <<'PY'
import gzip, hashlib, json, os, subprocess, sys
out = sys.argv[1]
MiB = 1 << 20
BS = 2 * MiB

def pattern(seed):
    # deterministic and distinct per seed and per 4 KiB page, but compressible
    # (the fixture stays small in the repository)
    return b"".join(("seed=%d page=%d " % (seed, i)).encode().ljust(4096, b"~") for i in range(BS // 4096))

def checksum(data):
    return hashlib.sha512(data).hexdigest()[:64]

def vol_dir(name):
    h = hashlib.sha512(name.encode()).hexdigest()
    return os.path.join(out, "backupstore", "volumes", h[0:2], h[2:4], name)

def put_block(vol, data, method):
    c = checksum(data)
    d = os.path.join(vol_dir(vol), "blocks", c[0:2], c[2:4])
    os.makedirs(d, exist_ok=True)
    p = os.path.join(d, c + ".blk")
    if method == "lz4":
        comp = subprocess.run(["lz4", "-c", "-q"], input=data, capture_output=True, check=True).stdout
    else:
        comp = gzip.compress(data, mtime=0)
    with open(p, "wb") as f:
        f.write(comp)
    return c, len(comp)

def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(obj, separators=(",", ":")))

def q(s):  # Longhorn's double-encoded string fields in volume.cfg
    return json.dumps(s)

expected = []

def volume(name, size, method, backups, legacy=False):
    blocks_written = set()
    state = bytearray(size)
    last = None
    for bname, snap, created, blocks, incremental in backups:
        mappings, newly = [], 0
        for off, seed in blocks:
            data = bytes(BS) if seed == 0 else pattern(seed)
            c, n = put_block(name, data, method)
            if c not in blocks_written:
                newly += n
                blocks_written.add(c)
            mappings.append({"Offset": off, "BlockChecksum": c})
            state[off:off+BS] = data
        mappings.sort(key=lambda m: m["Offset"])
        cfg = {"Name": bname, "VolumeName": name, "SnapshotName": snap, "SnapshotCreatedAt": created,
               "CreatedTime": created[:-3] + "05Z", "Size": str(len(mappings) * BS), "Labels": {"app": "fixture"}}
        if not legacy:
            cfg.update({"Parameters": None, "IsIncremental": incremental, "CompressionMethod": method,
                        "NewlyUploadedDataSize": str(newly), "ReUploadedDataSize": "0", "ProcessingBlocks": None})
        else:
            cfg.update({"IsIncremental": incremental})
        cfg["Blocks"] = mappings
        cfg["SingleFile"] = {"FilePath": ""}
        write_json(os.path.join(vol_dir(name), "backups", "backup_" + bname + ".cfg"), cfg)
        expected.append("%s %s %s" % (name, bname, hashlib.sha256(bytes(state)).hexdigest()))
        last = (bname, created)
    v = {"Name": name, "Size": str(size), "Labels": {"app": "fixture"}, "CreatedTime": "2026-10-05T00:40:00Z",
         "LastBackupName": last[0], "LastBackupAt": last[1], "BlockCount": str(len(blocks_written)),
         "BackingImageName": q(""), "BackingImageChecksum": q("")}
    if not legacy:
        v.update({"CompressionMethod": q(method), "StorageClassName": q("longhorn"), "DataEngine": q("v1"),
                  "LinkedCloneSourceVolume": q(""), "LinkedCloneSourceSnapshot": q("")})
    write_json(os.path.join(vol_dir(name), "volume.cfg"), v)

# lz4 volume: a full backup, then one that changes block 0, adds a zero block
# at 2 MiB and keeps the block at 4 MiB (each .cfg lists every block).
volume("lh-fixture", 6 * MiB, "lz4", [
    ("backup-0123456789abcdef", "snap-1", "2026-10-05T00:40:38Z", [(0, 1), (4 * MiB, 2)], False),
    ("backup-fedcba9876543210", "snap-2", "2026-10-05T01:40:38Z", [(0, 3), (2 * MiB, 0), (4 * MiB, 2)], True),
])
# A volume from a Longhorn before 1.5: no CompressionMethod anywhere (gzip),
# no Parameters.
volume("lh-legacy", 4 * MiB, "gzip", [
    ("backup-aaaaaaaaaaaaaaaa", "snap-old", "2022-01-02T03:04:05Z", [(2 * MiB, 7)], False),
], legacy=True)
with open(out + ".expected", "w") as f:
    f.write("\n".join(expected) + "\n")
PY
echo "wrote $out and $out.expected"
