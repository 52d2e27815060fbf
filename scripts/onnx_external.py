"""Writes an ONNX model as a small graph file plus one external-data file of
its large weights, the layout robotmem ships (scripts/make-use-model.py uses
it; it runs in the conversion venv and needs the `onnx` package).

ONNX Runtime memory-maps external initialisers instead of parsing and copying
them out of the protobuf: a faster session creation, and the weights stay clean
file pages shared by every process that maps them (they count in a process's
RSS only where touched, and the kernel can reclaim them).

Layout: every initialiser of at least THRESHOLD bytes goes, in graph order, to
DATA_NAME beside the graph, each at an offset aligned to ALIGN (as onnxruntime's
own saver aligns for mmap), zero bytes between; the graph refers to it by the
relative location DATA_NAME. Output is deterministic: the same model gives
byte-identical files.
"""

import os

DATA_NAME = "model.data"
THRESHOLD = 64 * 1024
ALIGN = 64 * 1024


def split(model, data_name=DATA_NAME, threshold=THRESHOLD, align=ALIGN):
    """Moves the large initialisers of `model` (in place) to external data.
    Returns (graph bytes, data bytes)."""
    from onnx import TensorProto, numpy_helper  # noqa: PLC0415

    data = bytearray()
    for t in model.graph.initializer:
        if t.data_location == TensorProto.EXTERNAL:
            raise ValueError(f"initialiser {t.name} is already external")
        raw = t.raw_data if t.HasField("raw_data") else numpy_helper.to_array(t).tobytes()
        if len(raw) < threshold:
            continue
        if t.data_type == TensorProto.STRING:
            raise ValueError(f"string initialiser {t.name} cannot be external")
        offset = (len(data) + align - 1) // align * align
        data.extend(bytes(offset - len(data)))
        data.extend(raw)
        # numpy_helper.to_array(t) read the typed field; clear them all.
        for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
            t.ClearField(field)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", data_name), ("offset", str(offset)), ("length", str(len(raw)))):
            e = t.external_data.add()
            e.key, e.value = key, value
    return model.SerializeToString(deterministic=True), bytes(data)


def write(model, out_dir, graph_name="model.onnx", data_name=DATA_NAME):
    """split() and writes both files into out_dir, each atomically (data first)."""
    graph, data = split(model, data_name)
    for name, blob in ((data_name, data), (graph_name, graph)):
        path = os.path.join(out_dir, name)
        part = path + ".part"
        with open(part, "wb") as f:
            f.write(blob)
        os.chmod(part, 0o644)
        os.replace(part, path)
    return len(graph), len(data)


def check(graph_path, data_name=DATA_NAME, align=ALIGN):
    """Problems of the external-data layout of the graph at graph_path (empty
    when it is as write() makes it): every external tensor in data_name beside
    it, aligned, inside the file, not overlapping."""
    import onnx  # noqa: PLC0415
    from onnx import TensorProto  # noqa: PLC0415

    model = onnx.load(graph_path, load_external_data=False)
    size = os.path.getsize(os.path.join(os.path.dirname(graph_path), data_name))
    problems, spans = [], []
    for t in model.graph.initializer:
        if t.data_location != TensorProto.EXTERNAL:
            continue
        kv = {e.key: e.value for e in t.external_data}
        offset, length = int(kv.get("offset", 0)), int(kv.get("length", -1))
        if kv.get("location") != data_name:
            problems.append(f"{t.name}: location {kv.get('location')!r}")
        if offset % align or length < 0 or offset + length > size:
            problems.append(f"{t.name}: offset {offset} length {length} (file {size} bytes)")
        spans.append((offset, offset + length, t.name))
    spans.sort()
    for (_, end, a), (start, _, b) in zip(spans, spans[1:]):
        if start < end:
            problems.append(f"{a} overlaps {b}")
    if not spans:
        problems.append("no external initialisers")
    return problems
