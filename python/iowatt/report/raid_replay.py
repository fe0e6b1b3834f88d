"""A replay over an emulated array beside the RAID simulation of its trace (``iowatt report
REPLAY-RUN [EMULATE-RUN] SIM-RUN``): per personality, the array's power per bin as the replay
recorded it (``--power emulated:path=MOUNT``) and as the simulator computed it, on the
simulator's own bins, and the CDFs of the replay's requests against the simulator's.

Which personality the replay's array ran is not in the replay run: its ``emulated`` power
source names the mount only. It is found, in this order,

1. from the ``emulate`` run that served that mount while the replay ran (its config's mount is
   the source's path and its time span holds the replay's): one given to the report, or one
   beside the replay in its results directory — the emulator's own record, so preferred;
2. from the replay's label ``personality`` (``iowatt replay … --label personality=paraid``);

and otherwise the replay is left out with a note saying how to give it.

Time zero: the simulator starts its clock at the first request it serves (a GET answered 2xx
with a body, in the replay's log) and divides log time by the replay's speed-up, so its bins
start at that request's due time in the replay's clock, where the replay's power is read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, MaxNLocator

from iowatt.report import sim_raid
from iowatt.report.load import Run
from iowatt.report.plots import _latency_axis, _to_svg
from iowatt.store.runs import DamagedRun, read_manifest, read_summary, read_table
from iowatt.units import format_joules, format_watts

FloatArray = npt.NDArray[np.float64]
_CDF_POINTS = 2000  # quantiles drawn of a long request list
_BATCH = 1 << 20
# How each side is drawn in both figures; the colour is the personality's.
SIDES = {
    "simulated": ("simulated (iowatt sim raid)", "solid"),
    "replay": ("the replay (over the emulated array)", "dashed"),
    "array": ("the emulated array's own requests", "dotted"),
}


@dataclass(frozen=True)
class Pair:
    """One replay over an emulated array and the simulation of its personality."""

    personality: str
    replay: Run
    sim: Path
    emulate: Path | None
    found_by: str


@dataclass(frozen=True)
class PairRow:
    personality: str
    color: str
    replay: str
    found_by: str
    sim: str
    bins: str
    emulated: str
    simulated: str
    difference: str
    ks_latency: str
    ks_completion: str


@dataclass(frozen=True)
class RaidReplayView:
    rows: list[PairRow]
    figures: list[tuple[str, str, str]]  # (name, caption, svg)
    notes: list[str]


def ks_distance(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """The two-sample Kolmogorov–Smirnov statistic: the largest distance between the two
    samples' empirical CDFs, sup_x |F_a(x) − F_b(x)| (Kolmogorov 1933; Smirnov 1948). Both
    step functions change only at the samples' values, so the supremum is reached at one of
    them. NaN when either sample is empty."""
    a, b = np.sort(np.asarray(a, np.float64)), np.sort(np.asarray(b, np.float64))
    if a.size == 0 or b.size == 0:
        return float("nan")
    x = np.concatenate([a, b])
    fa = np.searchsorted(a, x, side="right") / a.size
    fb = np.searchsorted(b, x, side="right") / b.size
    return float(np.abs(fa - fb).max())


def _emulated_path(manifest: Mapping[str, Any]) -> str | None:
    """The mount the replay's ``emulated`` power source read, if it had one."""
    power = (manifest.get("config") or {}).get("power") or {}
    for source in power.get("sources") or []:
        if source.get("kind") == "emulated":
            return str((source.get("options") or {}).get("path") or "") or None
    return None


def _same_path(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


def _serving(emulates: Sequence[Path], mount: str, replay: Mapping[str, Any]) -> Path | None:
    """The emulate run that served ``mount`` while the replay ran (the latest to start)."""
    start, end = replay.get("started_ns") or 0, replay.get("ended_ns") or 0
    found: list[tuple[int, Path]] = []
    for path in emulates:
        try:
            m = read_manifest(path)
        except DamagedRun:
            continue
        config = m.get("config") or {}
        began, ended = m.get("started_ns") or 0, m.get("ended_ns") or 0
        same = m.get("kind") == "emulate" and _same_path(str(config.get("mount", "")), mount)
        if same and began <= start and end <= ended:
            found.append((began, path))
    return max(found)[1] if found else None


def _beside(replay: Path) -> list[Path]:
    """The emulate runs in the replay's results directory."""
    return sorted(p for p in replay.parent.glob("*-emulate-*") if (p / "manifest.json").exists())


def _disks(run: Run) -> int:
    """The emulated array's disks the replay recorded a channel of (0: one emulated disk)."""
    channels = (run.summary.get("power") or {}).get("channels") or []
    return sum(1 for c in channels if c.get("source") == "emulated" and c.get("parent") == "disk")


def _personalities(sim: Path) -> list[str]:
    rows = read_summary(sim).get("raid") or []
    return [r["personality"] for r in rows]


def _pairs(
    replays: Sequence[Run], sims: Sequence[Path], emulates: Sequence[Path], notes: list[str]
) -> list[Pair]:
    pairs = []
    for run in replays:
        mount = _emulated_path(run.manifest)
        if mount is None:
            continue  # not over an emulated disk: nothing to set beside the simulation
        label = (run.manifest.get("labels") or {}).get("personality")
        emulate = _serving([*emulates, *_beside(run.path)], mount, run.manifest)
        array = None if emulate is None else read_summary(emulate).get("array")
        if array is None and (emulate is not None or _disks(run) == 0):
            notes.append(
                f"Replay `{run.run_id}` read one emulated disk at `{mount}`, not an array: it"
                " has no RAID personality to set beside the simulation."
            )
            continue
        if emulate is not None and array is not None:
            personality, found_by = array["personality"], f"emulate run `{emulate.name}`"
            if label and label != personality:
                notes.append(
                    f"Replay `{run.run_id}` is labelled `personality={label}`, but emulate run"
                    f" `{emulate.name}` served its mount as `{personality}`: the run's is taken."
                )
        elif label in sim_raid.NAMES:
            personality, found_by = label, f"replay's label personality={label}"
        else:
            notes.append(
                f"Replay `{run.run_id}` read an emulated array at `{mount}`, under a"
                " personality the report cannot tell: give the emulate run that served it"
                " (`iowatt report REPLAY-RUN EMULATE-RUN SIM-RUN`), or label the replay"
                " (`--label personality=paraid`)."
            )
            continue
        sim = _sim_of(run, personality, sims, notes)
        if sim is None:
            continue
        disks = ((read_manifest(sim).get("config") or {}).get("array") or {}).get("disks")
        if disks and _disks(run) and disks != _disks(run):
            notes.append(
                f"Simulation `{sim.name}` has {disks} disks, the array replay `{run.run_id}`"
                f" read {_disks(run)}: their energy differs by that alone."
            )
        pairs.append(Pair(personality, run, sim, emulate, found_by))
    return pairs


def _sim_of(run: Run, personality: str, sims: Sequence[Path], notes: list[str]) -> Path | None:
    """The simulation of this replay's trace that has ``personality``: one whose trace is the
    replay run, else any, said so."""
    having = [s for s in sims if personality in _personalities(s)]
    if not having:
        notes.append(
            f"No simulation given has {sim_raid._name(personality)}, the personality replay"
            f" `{run.run_id}` ran: simulate it with `iowatt sim raid {run.run_id}"
            f" --personalities {personality}`."
        )
        return None
    for sim in having:
        trace = ((read_manifest(sim).get("config") or {}).get("trace") or {}).get("path")
        if trace and Path(str(trace)).name == run.path.name:
            return sim
    notes.append(
        f"Simulation `{having[0].name}` is not of replay `{run.run_id}`'s trace (`iowatt sim"
        f" raid {run.run_id}` makes one): they are set side by side all the same."
    )
    return having[0]


@dataclass(frozen=True)
class _Replayed:
    """What the comparison reads of a replay run: when the simulator's clock starts (s on the
    replay's), and the requests the simulator serves, as answered."""

    zero_s: float
    ttfb_ns: FloatArray
    completion_ns: FloatArray


def _replayed(run: Run) -> _Replayed | None:
    path = run.path / "requests.parquet"
    if not path.exists():
        return None
    columns = ["method", "log_status", "log_bytes", "due_ns", "ttfb_ns", "completion_ns"]
    try:
        table = pq.ParquetFile(path).read(columns=columns)
    except (OSError, pa.ArrowException) as e:
        raise DamagedRun(run.path, path.name, f"not a readable Parquet file: {e}") from None
    served = pc.and_(
        pc.and_(pc.equal(table["method"], "GET"), pc.greater(table["log_bytes"], 0)),
        pc.and_(pc.greater_equal(table["log_status"], 200), pc.less(table["log_status"], 300)),
    )
    table = table.filter(pc.fill_null(served, False))
    if table.num_rows == 0:
        return None
    answered = table.filter(pc.is_valid(table["completion_ns"]))

    def values(column: str) -> FloatArray:
        col = answered[column].drop_null()
        return np.asarray(col.to_numpy(zero_copy_only=False), np.float64)

    zero = float(pc.min(table["due_ns"]).as_py()) / 1e9
    return _Replayed(zero, values("ttfb_ns"), values("completion_ns"))


def _requests(
    path: Path, personality: str, seed: int | None, data_only: bool
) -> dict[str, FloatArray]:
    """Latency and completion (ns) of one personality's requests in raid_requests.parquet
    (of ``seed``; ``data_only``: an emulated array's data requests served)."""
    out: dict[str, list[npt.NDArray[Any]]] = {m: [] for m in sim_raid.METRICS}
    file = path / sim_raid.REQUESTS
    if not file.exists():
        return {m: np.zeros(0) for m in sim_raid.METRICS}
    columns = ["personality", "seed", *sim_raid.METRICS] + (["bytes", "ok"] if data_only else [])
    try:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=_BATCH, columns=columns):
            keep = pc.equal(batch.column("personality"), personality)
            if seed is not None:
                keep = pc.and_(keep, pc.equal(batch.column("seed"), seed))
            if data_only:
                keep = pc.and_(keep, pc.and_(pc.greater(batch.column("bytes"), 0),
                                             batch.column("ok")))  # fmt: skip
            rows = batch.filter(keep)
            for m in sim_raid.METRICS:
                out[m].append(rows.column(m).to_numpy(zero_copy_only=False))
    except (OSError, pa.ArrowException) as e:
        raise DamagedRun(path, sim_raid.REQUESTS, f"not a readable Parquet file: {e}") from None
    return {m: np.concatenate(v).astype(np.float64) if v else np.zeros(0) for m, v in out.items()}


def _energy_so_far(run: Run) -> tuple[FloatArray, FloatArray] | None:
    """The emulated array's energy (J) since the recording began, at each reading (s on the
    replay's clock): its ``energy_uj`` counter, or its power integrated where none."""
    table = read_table(run.path, "power.parquet")
    if table is None:
        return None
    rows = table.filter(
        pc.and_(pc.equal(table["source"], "emulated"), pc.equal(table["channel"], "disk"))
    ).sort_by("t_s")
    if rows.num_rows < 2:
        return None
    t = rows["t_s"].to_numpy()
    joules = rows["joules"].to_numpy(zero_copy_only=False).astype(np.float64)
    if np.isfinite(joules).all():
        return t, joules
    watts = np.nan_to_num(rows["watts"].to_numpy(zero_copy_only=False).astype(np.float64))
    return t, np.concatenate([[0.0], np.cumsum((watts[1:] + watts[:-1]) / 2 * np.diff(t))])


def binned_energy(t: FloatArray, so_far: FloatArray, edges: FloatArray) -> FloatArray:
    """The energy in each bin between ``edges`` from a cumulative reading ``so_far`` at ``t``
    (linear between readings); NaN for a bin the readings do not cover."""
    at = np.interp(edges, t, so_far)
    energy = np.diff(at)
    outside = (edges[:-1] < t[0]) | (edges[1:] > t[-1])
    energy[outside] = np.nan
    return energy


def _styles(pairs: Sequence[Pair]) -> list[tuple[str, str]]:
    """Each pair's name and colour: its personality's, coloured as the simulation's own page
    colours it; where a personality was replayed more than once, each replay's own."""
    if len({p.personality for p in pairs}) == len(pairs):
        return [
            (sim_raid._name(p.personality), f"C{_personalities(p.sim).index(p.personality) % 10}")
            for p in pairs
        ]
    return [
        (f"{sim_raid._name(p.personality)} · {p.replay.run_id[-6:]}", f"C{i % 10}")
        for i, p in enumerate(pairs)
    ]


@dataclass(frozen=True)
class _Compared:
    pair: Pair
    label: str
    color: str
    edges: FloatArray  # the simulator's bins (s of simulated time)
    simulated_w: FloatArray
    emulated_w: FloatArray | None  # None: the bins do not line up
    cdfs: dict[str, dict[str, FloatArray]]  # side → metric → values (ns)


def _compare(pair: Pair, label: str, color: str, notes: list[str]) -> tuple[_Compared, PairRow]:
    p, run = pair.personality, pair.replay
    config = read_manifest(pair.sim).get("config") or {}
    seed = int((config.get("seeds") or [1])[0])
    power = read_table(pair.sim, "raid_power.parquet")
    part = pa.table({"t_s": pa.array([], pa.float64())})
    if power is not None:
        part = power.filter(
            pc.and_(
                pc.and_(pc.is_null(power["disk"]), pc.equal(power["seed"], seed)),
                pc.equal(power["personality"], p),
            )
        ).sort_by("t_s")
    edges = sim_raid.bin_edges(part) if part.num_rows else np.zeros(1)
    simulated_w = part["mean_w"].to_numpy() if part.num_rows else np.zeros(0)
    simulated_j = part["energy_j"].to_numpy() if part.num_rows else np.zeros(0)
    replayed = _replayed(run)
    emulated_w, bins, emulated, simulated, difference = None, "–", "–", "–", "–"
    sim_speedup = float(config.get("speedup") or 1)
    replay_speedup = float((run.manifest.get("config") or {}).get("speedup") or 1)
    if not np.isclose(sim_speedup, replay_speedup):
        notes.append(
            f"Simulation `{pair.sim.name}` ran at {sim_speedup:g}×, replay `{run.run_id}` at"
            f" {replay_speedup:g}×: their bins do not line up, so their power is not compared."
        )
    elif replayed is not None and part.num_rows and (so_far := _energy_so_far(run)):
        energy = binned_energy(*so_far, edges + replayed.zero_s)
        emulated_w = energy / np.diff(edges)
        both = np.isfinite(energy)
        if both.any():
            e, s = float(energy[both].sum()), float(simulated_j[both].sum())
            bins = f"{int(both.sum()):,} of {both.size:,}"
            emulated, simulated = format_joules(e), format_joules(s)
            difference = f"{e / s - 1:+.1%}" if s > 0 else "–"
    sides = {"simulated": _requests(pair.sim, p, seed, data_only=False)}
    if replayed is not None:
        sides["replay"] = {"latency_ns": replayed.ttfb_ns, "completion_ns": replayed.completion_ns}
    if pair.emulate is not None:
        sides["array"] = _requests(pair.emulate, p, None, data_only=True)

    def ks(metric: str) -> str:
        if "replay" not in sides:
            return "–"
        d = ks_distance(sides["replay"][metric], sides["simulated"][metric])
        return "–" if np.isnan(d) else f"{d:.3f}"

    row = PairRow(
        personality=label,
        color=to_hex(color),
        replay=run.run_id,
        found_by=pair.found_by,
        sim=pair.sim.name,
        bins=bins,
        emulated=emulated,
        simulated=simulated,
        difference=difference,
        ks_latency=ks("latency_ns"),
        ks_completion=ks("completion_ns"),
    )
    return _Compared(pair, label, color, edges, simulated_w, emulated_w, sides), row


def power_figure(compared: Sequence[_Compared]) -> str | None:
    """Per personality, a panel of the array's mean W per bin: simulated, and emulated as the
    replay recorded it, on the simulator's bins."""
    drawn = [c for c in compared if c.simulated_w.size]
    if not drawn:
        return None
    unit, unit_name = sim_raid.time_unit(max(float(c.edges[-1]) for c in drawn))
    fig = Figure(figsize=(9.0, 1.2 + 1.6 * len(drawn)), layout="constrained")
    axes = fig.subplots(len(drawn), 1, sharex=True, squeeze=False)[:, 0]
    for ax, c in zip(axes, drawn, strict=True):
        t = c.edges / unit
        lines = [("simulated", c.simulated_w)]
        if c.emulated_w is not None:
            lines.append(("replay", c.emulated_w))
        shown = []
        for side, watts in lines:
            ax.plot(t, np.append(watts, watts[-1]), drawstyle="steps-post", color=c.color,
                    ls=SIDES[side][1], lw=1.2)  # fmt: skip
            shown.append(watts[np.isfinite(watts)])
        values = np.concatenate(shown)
        lo, hi = float(values.min()), float(values.max())
        pad = max((hi - lo) * 0.15, 0.05 * max(abs(hi), 1.0))
        ax.set_ylim(max(lo - pad, 0.0), hi + pad)
        ax.set_ylabel(c.label.replace(" · ", "\n"), rotation=0, ha="right", va="center")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: format_watts(v)))
        ax.yaxis.set_major_locator(MaxNLocator(3))
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(f"simulated time ({unit_name}), the replay's from its first request")
    handles = [
        Line2D([], [], color="0.3", ls=SIDES["simulated"][1], label=SIDES["simulated"][0]),
        Line2D([], [], color="0.3", ls=SIDES["replay"][1], label="the replay's power recording"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize="small",
               frameon=False)  # fmt: skip
    return _to_svg(fig, "raid-replay-power")


def _cdf_points(values: FloatArray) -> tuple[FloatArray, FloatArray]:
    x = np.sort(values)
    y = np.arange(1, x.size + 1) / x.size
    if x.size > _CDF_POINTS:
        y = np.linspace(0, 1, _CDF_POINTS + 1)[1:]
        x = np.quantile(x, y)
    return x, y


def cdf_figure(compared: Sequence[_Compared]) -> str | None:
    """Latency and completion time side by side: per personality (colour), the simulator's
    CDF, the replay's and, where the emulate run is given, the emulated array's own."""
    fig = Figure(figsize=(9.0, 3.8), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    sides_drawn: list[str] = []
    personalities: list[tuple[str, str]] = []
    for ax, metric, what in zip(
        axes, sim_raid.METRICS, ("latency (first byte)", "completion time"), strict=True
    ):
        lo, hi = np.inf, 0.0
        for c in compared:
            for side, values in c.cdfs.items():
                v = values[metric]
                v = v[v > 0] if (v > 0).any() else v
                if v.size == 0:
                    continue
                x, y = _cdf_points(v)
                ax.plot(x, y, color=c.color, ls=SIDES[side][1], lw=1.3)
                lo, hi = min(lo, float(x[0])), max(hi, float(x[-1]))
                if side not in sides_drawn:
                    sides_drawn.append(side)
                key = (c.label, c.color)
                if key not in personalities:
                    personalities.append(key)
        if not np.isfinite(lo):
            continue
        _latency_axis(ax, float(np.log10(max(hi, lo * 10) / max(lo, 1.0))))
        ax.set_xlabel(what)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3, which="major")
    if not personalities:
        return None
    axes[0].set_ylabel("fraction of requests")
    handles: list[Any] = [
        Line2D([], [], color=color, lw=1.3, label=label) for label, color in personalities
    ]
    handles += [
        Line2D([], [], color="0.3", ls=SIDES[s][1], lw=1.3, label=SIDES[s][0]) for s in sides_drawn
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 3),
               fontsize="small", frameon=False)  # fmt: skip
    return _to_svg(fig, "raid-replay-cdf")


def raid_replay_view(
    replays: Sequence[Run], sims: Sequence[Path], emulates: Sequence[Path]
) -> RaidReplayView | None:
    """The comparison of every replay over an emulated array with its simulation; None when
    no replay was recorded over one."""
    if not any(_emulated_path(r.manifest) for r in replays):
        return None
    notes: list[str] = []
    pairs = _pairs(replays, sims, emulates, notes)
    compared, rows = [], []
    for pair, (label, color) in zip(pairs, _styles(pairs), strict=True):
        c, row = _compare(pair, label, color, notes)
        compared.append(c)
        rows.append(row)
    figures = []
    bin_s = {
        float(((read_manifest(p.sim).get("config") or {}).get("array") or {}).get("bin_s", 15))
        for p in pairs
    }
    bins = sim_raid._dur(bin_s.pop()) if len(bin_s) == 1 else "simulator's"
    if (svg := power_figure(compared)) is not None:
        figures.append(
            (
                "raid-replay-power",
                f"The array's mean power per {bins} bin, each personality in a panel of its"
                " own: simulated (solid) and as the replay recorded the emulated array's"
                " energy counter (dashed), on the simulator's bins, its clock started at the"
                " first request it serves.",
                svg,
            )
        )
    if (svg := cdf_figure(compared)) is not None:
        figures.append(
            (
                "raid-replay-cdf",
                "Latency and completion time of the requests the simulator serves (GETs"
                " answered 2xx with a body): the simulator's from arrival to the first and the"
                " last stripe unit; the replay's from the request's due time to its first and"
                " last byte (the page cache, nginx and the network included); the emulated"
                " array's own, from arrival at the mount, where its emulate run is given.",
                svg,
            )
        )
    return RaidReplayView(rows, figures, notes)
