"""The compiled f-stream loop and the OSG import take positions from the structures they mirror.

wire.py names every field of the f-stream records; the loop's offsets come from those names, and
file_access rows are built by field name. These tests check the derived offsets against what
``struct`` itself packs, and that one edit to a layout (a field inserted) reaches the loop.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tierlens.collector import fstream as fs, osg
from tierlens.collector.wire import (
    CLOSE_HAS_OPS,
    CLOSE_OPS_REC,
    FILE_HDR,
    HDR,
    HEADER_BYTES,
    IS_CLOSE,
    IS_OPEN,
    IS_TIME,
    OPEN_HAS_LFN,
    OPEN_REC,
    OPS_BODY,
    TIME_HAS_SID,
    TIME_REC,
    XFR_REC,
    CloseRecord,
    Layout,
    OpenRecord,
    TimeRecord,
)
from tierlens.records import FILE_ACCESS

LAYOUTS = {"file header": FILE_HDR, "time": TIME_REC, "open": OPEN_REC, "xfr": XFR_REC, "close+ops": CLOSE_OPS_REC}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_offsets_are_where_struct_packs_each_field(name):
    """Pack a distinct value per field; each field's derived offset and code read it back."""
    layout = LAYOUTS[name]
    values = [j + 1 for j in range(len(layout.names))]
    raw = layout.fmt.pack(*values)
    assert len(raw) == layout.size
    for j, field in enumerate(layout.names):
        got = struct.unpack_from(">" + layout.code(field), raw, layout.offset(field))[0]
        assert got == values[j], (name, field)


def test_the_loop_reads_the_fields_of_the_5x_layouts():
    """WIRE against byte positions counted by hand from XrdXrootdMonData.hh (xrootd 5.x)."""
    w = fs.WIRE
    assert (w.header_bytes, w.file_hdr_bytes, w.rec_size, w.rec_id) == (8, 8, 2, 4)
    assert (w.time_bytes, w.tod_beg, w.tod_end) == (24, 8, 12)
    assert (w.open_min_bytes, w.open_size, w.open_user, w.open_lfn) == (16, 8, 16, 20)
    assert (w.close_bytes, w.close_read, w.close_readv, w.close_write) == (32, 8, 16, 24)
    assert (w.close_ops_bytes, w.close_nread, w.close_nreadv, w.close_nwrite) == (80, 32, 36, 40)
    assert (w.xfr_bytes, w.xfr_read, w.xfr_readv, w.xfr_write) == (32, 8, 16, 24)


def test_a_field_of_another_width_fails_at_import_time():
    wide = Layout(struct.Struct(">BBiI"), FILE_HDR.names)  # rec_size as 32 bits: the loop reads 16
    with pytest.raises(TypeError, match="rec_size"):
        fs.offsets_of(HEADER_BYTES, wide, TIME_REC, OPEN_REC, XFR_REC, XFR_REC, CLOSE_OPS_REC)


def _walk(packet: bytes, at: fs.Offsets):
    """One packet through the compiled loop with fresh tables; the rows, arena and errors."""
    of = fs.OpenFiles(64)
    of.ensure(64, 4096, 64)
    payload = np.frombuffer(packet, dtype=np.uint8)
    pk = fs.Packets(
        payload,
        np.array([0, len(packet)], dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.zeros(1, dtype=np.int64),
        np.array([1000.0]),
    )
    out = fs.Output(
        np.zeros((fs.R_COLS, 64), dtype=np.int64),
        np.zeros((64, 2)),
        np.zeros(1, dtype=np.int64),
        np.zeros((64, 2), dtype=np.int64),
        np.zeros((64, 2)),
        np.zeros(1, dtype=np.int64),
        np.zeros((1, 2), dtype=np.int64),
        np.zeros(fs.N_COUNTERS, dtype=np.int64),
    )
    done = fs.walk(pk, 0, of.open_table(), of.lfn_arena(), of.orphan_table(), np.zeros(1), out, at)
    assert done == 1
    return out, of


def _row(out: fs.Output, of: fs.OpenFiles) -> dict:
    assert out.nrows[0] == 1
    r = out.rows[:, 0]
    return {
        "fid": r[fs.R_FID],
        "size": r[fs.R_SIZE],
        "user": r[fs.R_USER],
        "read": r[fs.R_RD],
        "readv": r[fs.R_RV],
        "write": r[fs.R_WR],
        "n_read": r[fs.R_NRD],
        "n_readv": r[fs.R_NRV],
        "n_write": r[fs.R_NWR],
        "lfn": of.lfn(int(r[fs.R_LFN_OFF]), int(r[fs.R_LFN_LEN])),
        "start": out.row_times[0, fs.T_START],
        "end": out.row_times[0, fs.T_END],
    }


def _packet(records: bytes) -> bytes:
    return HDR.pack(ord("f"), 0, HEADER_BYTES + len(records), 1_700_000_000) + records


EXPECTED = {
    "fid": 7,
    "size": 123_456_789,
    "user": 42,
    "read": 1000,
    "readv": 200,
    "write": 30,
    "n_read": 5,
    "n_readv": 2,
    "n_write": 1,
    "lfn": b"/store/a.root",
    "start": 100.0,
    "end": 160.0,
}


def test_the_loop_decodes_the_wire_records():
    packet = _packet(
        TimeRecord(100, 160, 9).pack()
        + OpenRecord(7, 123_456_789, 42, "/store/a.root").pack()
        + CloseRecord(7, 1000, 200, 30, ops=(5, 2, 1)).pack()
    )
    out, of = _walk(packet, fs.WIRE)
    assert out.errors[0, 0] == fs.E_NONE
    assert _row(out, of) == EXPECTED


def test_a_field_added_to_the_layouts_reaches_the_loop():
    """Edit the layouts once (an 8-byte field before the open's user dictid, a 4-byte one before
    the close's byte counts), pack records with the edited structures, and walk them with the
    offsets derived from the edit: every field lands where the edited layouts put it."""
    open_edit = Layout(struct.Struct(">BBhIqq"), FILE_HDR.names + ("file_size", "open_flags")).then(
        Layout(struct.Struct(">I"), ("user",))
    )
    xfr_edit = FILE_HDR.then(Layout(struct.Struct(">iqqq"), ("route", "read", "readv", "write")))
    close_ops_edit = xfr_edit.then(OPS_BODY)
    at = fs.offsets_of(HEADER_BYTES, FILE_HDR, TIME_REC, open_edit, xfr_edit, xfr_edit, close_ops_edit)
    assert at.open_lfn == fs.WIRE.open_lfn + 8 and at.close_nread == fs.WIRE.close_nread + 4

    lfn = b"/store/a.root\0"
    lfn += b"\0" * (-(open_edit.size + len(lfn)) % 4)
    opened = open_edit.fmt.pack(IS_OPEN, OPEN_HAS_LFN, open_edit.size + len(lfn), 7, 123_456_789, -1, 42) + lfn
    ops = (5, 2, 1) + (0,) * (len(OPS_BODY.names) - 3)
    closed = close_ops_edit.fmt.pack(IS_CLOSE, CLOSE_HAS_OPS, close_ops_edit.size, 7, -1, 1000, 200, 30, *ops)
    timed = TIME_REC.fmt.pack(IS_TIME, TIME_HAS_SID, TIME_REC.size, 0, 0, 100, 160, 9)
    packet = _packet(timed + opened + closed)

    out, of = _walk(packet, at)
    assert out.errors[0, 0] == fs.E_NONE
    assert _row(out, of) == EXPECTED
    # the same bytes read with the unedited offsets do not give these fields: the edit mattered
    out, of = _walk(packet, fs.WIRE)
    assert out.nrows[0] == 0 or _row(out, of) != EXPECTED


# ---- OSG import: rows by field name ------------------------------------------------------------
OSG = {
    "server_hostname": "xrd1.example.org",
    "unique_id": "u-1",
    "filename": "/store/b.root",
    "filesize": 500,
    "start_time": 1_700_000_000_000,
    "end_time": 1_700_000_060_500,
    "read": 300,
    "readv": 100,
    "write": 7,
    "read_single_operations": 3,
    "read_vector_operations": 1,
    "write_operations": 1,
    "host": "wn1",
    "appinfo": "cmsRun",
    "read_single_average": 100.0,
}


def test_osg_fields_are_file_access_fields():
    row = dict(zip(FILE_ACCESS.names, osg.osg_row(OSG)))
    assert row["server_host"] == "xrd1.example.org" and row["unique_id"] == "u-1"
    assert row["file_lfn"] == "/store/b.root" and row["file_size_bytes"] == 500
    assert row["start_time"] == 1_700_000_000.0 and row["end_time"] == 1_700_000_060.5
    assert (row["read_bytes"], row["readv_bytes"], row["write_bytes"]) == (300, 100, 7)
    assert row["read_bytes_at_close"] == 300 + 100 and row["write_bytes_at_close"] == 7
    assert (row["read_ops"], row["readv_ops"], row["write_ops"]) == (3, 1, 1)
    assert row["read_single_average_bytes"] == 100.0 and row["read_vector_average_bytes"] is None
    assert row["client_host"] == "wn1" and row["app_name"] == "cmsRun" and row["close_seen"] is True
    assert row["server_role"] is None and row["client_pid"] is None and row["job_identity"] is None


def test_osg_rows_follow_the_schema_order(monkeypatch):
    """A field inserted into the schema moves every later value with it (positions are looked up)."""
    edited = ("server_host", "new_field") + tuple(n for n in FILE_ACCESS.names if n != "server_host")
    monkeypatch.setattr(osg, "COLUMNS", edited)
    monkeypatch.setattr(osg, "_COLUMN_SET", frozenset(edited))
    row = osg.osg_row(OSG)
    assert len(row) == len(edited)
    assert row[edited.index("new_field")] is None
    assert row[edited.index("file_lfn")] == "/store/b.root" and row[edited.index("write_ops")] == 1


def test_a_name_not_in_the_schema_is_an_error():
    with pytest.raises(KeyError, match="read_byte"):
        osg.in_schema_order({"read_byte": 1})
