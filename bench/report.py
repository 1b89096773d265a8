"""Turns bench/run.sh's raw results into bench/results.json and docs/performance.md.

Usage: report.py RESULTS_DIR OUT_JSON OUT_MD [--command ...] [--duration ...] ...

RESULTS_DIR holds NAME.jsonl (one wrk run a line, run 0 is the warm-up) and
ceiling_NAME.json. For each scenario the measured runs' median (by req/s) gives req/s, p50
and p99; the ratio is medialib's figure divided by the scenario's ceiling measured in the
same run. The analysis section of docs/performance.md is kept between the markers
<!-- analysis --> and <!-- /analysis --> (written by hand, preserved on every run), and so
is the "Media" section between <!-- media --> and <!-- /media --> (bench/media.sh writes it), and
so is the "Processing" section between <!-- processing --> and <!-- /processing -->
(bench/pipeline.sh writes it).
"""

import argparse
import datetime
import glob
import json
import os
import platform
import statistics
import subprocess

MIB = 1024.0


def table_scans(results):
    """tablescans_BACKEND.json: the token tables' scan counters over the token scenarios."""
    out = {}
    for path in glob.glob(os.path.join(results, "tablescans_*.json")):
        out[os.path.basename(path)[len("tablescans_") : -len(".json")]] = json.load(open(path))
    return out


def load(results):
    """(wrk runs, ceilings, flood runs): the median run of each scenario."""
    runs, ceilings, floods = {}, {}, {}
    for path in glob.glob(os.path.join(results, "*.jsonl")):
        name = os.path.basename(path)[: -len(".jsonl")]
        rows = [json.loads(line) for line in open(path) if line.strip()]
        if rows and "admitted_rps" in rows[0]:
            # bench/hello's flood client: admitted and refused answers apart.
            ordered = sorted(rows, key=lambda r: r["admitted_rps"])
            floods[name] = ordered[len(ordered) // 2] | {
                "admitted_rps_runs": [round(r["admitted_rps"], 1) for r in rows]}
            continue
        measured = [r for r in rows if r["run"] > 0] or rows
        ordered = sorted(measured, key=lambda r: r["rps"])
        median = ordered[len(ordered) // 2]
        runs[name] = {
            "rps": median["rps"],
            # 2xx answers a second (the scenario may allow others, such as a 503 when shed).
            "ok_rps": median["rps"] * (1 - median.get("allowed", 0) / max(median["requests"], 1)),
            "p50_ms": median["p50_us"] / 1000,
            "p99_ms": median["p99_us"] / 1000,
            "rps_runs": [round(r["rps"], 1) for r in measured],
            "connections": median["connections"],
            "rss_peak_mib": max(r["rss_peak_kib"] for r in measured) / MIB,
            "vmhwm_mib": max(r["vmhwm_kib"] for r in measured) / MIB,
            "bytes_per_response": median["bytes"] / max(median["requests"], 1),
            "pool_exhausted": any(r["exhausted"] for r in measured),
            "cpu_us": cpu_per_request(median),
        }
    for path in glob.glob(os.path.join(results, "ceiling_*.json")):
        name = os.path.basename(path)[len("ceiling_") : -len(".json")]
        ceilings[name] = json.load(open(path))
    return runs, ceilings, floods


def cpu_per_request(run):
    """The median run's CPU per answer by process, in µs (None for runs before bench/run.sh
    counted it), and how many of the machine's CPUs they kept busy together."""
    if "server_cpu_s" not in run or not run["requests"]:
        return None
    per = {k: run[f"{k}_cpu_s"] / run["requests"] * 1e6 for k in ("server", "client", "pg")}
    busy = sum(run[f"{k}_cpu_s"] for k in ("server", "client", "pg")) / max(run["seconds"], 1)
    return per | {"total": sum(per.values()), "cpus_busy": busy}


# The scenarios of the "CPU per request" table, in its order: (key prefix, label).
CPU_ROWS = (
    ("ceiling_hello", "hello-JSON (bench/hello), the describe's ceiling on SQLite"),
    ("describe_public", "describe GET, public object"),
    ("describe_bearer", "describe GET with a bearer token"),
    ("introspect", "introspection"),
    ("catalog_small", "catalog GET, small library"),
    ("token_refresh", "refresh_token grant"),
    ("token_code", "authorization_code grant"),
)


def cpu_table(md, runs, ceilings):
    """Where each scenario's CPU went, by process; the machine is saturated when the CPUs busy
    are close to its count, and then req/s is about CPUs busy ÷ total µs."""
    rows = []
    for key, label in CPU_ROWS:
        for b in ((None,) if key == "ceiling_hello" else ("sqlite", "postgres")):
            name = key if b is None else f"{key}_{b}"
            r = runs.get(name)
            if not r or not r.get("cpu_us"):
                continue
            c = r["cpu_us"]
            rows.append([label + ("" if b is None else f", {b}"), fmt(r["rps"]),
                         fmt(c["server"], 1), fmt(c["client"], 1),
                         fmt(c["pg"], 1) if b == "postgres" else "—", fmt(c["total"], 1),
                         fmt(c["cpus_busy"], 2)])
            if key == "describe_public" and b == "postgres":
                sel = ceilings.get("pg_select", {})
                if "client_cpu_us" in sel:
                    rows.append(["`pgbench -S -M prepared -c 8`, the describe's ceiling on "
                                 "PostgreSQL (a transaction)", fmt(sel["tps"]), "—",
                                 fmt(sel["client_cpu_us"], 1), fmt(sel["pg_cpu_us"], 1),
                                 fmt(sel["client_cpu_us"] + sel["pg_cpu_us"], 1), "—"])
    if not rows:
        return
    md.append("## CPU per request\n")
    md.append("User and system CPU time of each process over the median run (the one in the "
              "table above), divided by its answers: the server (medialib, or bench/hello for "
              "the ceiling), the load generator (wrk; pgbench for its ceiling) and PostgreSQL "
              "(the cluster's processes: the server's connections, the WAL writer, the "
              "checkpointer; for pgbench also the connections it opened and closed). Every process shares the same CPUs, so when they "
              "are all busy req/s is about CPUs busy × 1,000,000 ÷ total µs, and a ratio of "
              "two scenarios' req/s is about the inverse ratio of their totals.\n")
    shed_table(md, ["scenario", "req/s", "server µs", "client µs", "PostgreSQL µs",
                    "total µs", "CPUs busy"], rows, text_columns=1)


# The bound stated for the admitted listings' p99 under a flood this machine cannot serve, as
# a ratio to the same flood's p99 with shedding off, measured in the same run.
FLOOD_P99_RATIO = 0.75


def flood_row(key, backend, load, label, r, target, met):
    return {
        "scenario": key, "backend": backend, "load": load, "label": label,
        "connections": r["connections"], "admitted_rps": r["admitted_rps"],
        "refused_rps": r["refused_rps"], "admitted_p50_ms": r["admitted_p50_us"] / 1000,
        "admitted_p99_ms": r["admitted_p99_us"] / 1000,
        "admitted_rps_runs": r["admitted_rps_runs"], "ratio": None, "target": target,
        "met": met,
    }


def shedding_wrk(runs):
    """The servable load driven by wrk under each setting: 200s a second, as a ratio to the
    unshed run's."""
    out = []
    for b in ("sqlite", "postgres"):
        uncapped = runs.get(f"shed_wrk_uncapped_{b}")
        for variant in ("default", "fixed", "uncapped"):
            r = runs.get(f"shed_wrk_{variant}_{b}")
            if not r:
                continue
            ratio = r["ok_rps"] / uncapped["ok_rps"] if uncapped else None
            out.append({"scenario": f"shed_wrk_{variant}_{b}", "backend": b, "variant": variant,
                        "connections": r["connections"], "rps": r["rps"], "ok_rps": r["ok_rps"],
                        "p50_ms": r["p50_ms"], "p99_ms": r["p99_ms"], "ratio": ratio,
                        "met": None if ratio is None or variant != "default" else ratio >= 0.9})
    return out


def shedding(floods):
    """The load-shedding rows (issue 24): per backend, the servable load's admitted req/s under
    each setting, as a ratio to the unshed run's (target ≥ 0.9), and the unservable flood's
    admitted p99 (target: at most FLOOD_P99_RATIO of the unshed p99)."""
    out = []
    for b in ("sqlite", "postgres"):
        uncapped = floods.get(f"shed_uncapped_{b}")
        for variant, label in (("default", "as shipped (queue delay 200 ms, hard bound 4 096)"),
                               ("fixed", "the old rule (256 in flight)"),
                               ("uncapped", "no shedding")):
            r = floods.get(f"shed_{variant}_{b}")
            if not r:
                continue
            ratio = r["admitted_rps"] / uncapped["admitted_rps"] if uncapped else None
            out.append({
                "scenario": f"shed_{variant}_{b}", "backend": b, "load": "describe GET",
                "label": label, "connections": r["connections"],
                "admitted_rps": r["admitted_rps"], "refused_rps": r["refused_rps"],
                "admitted_p50_ms": r["admitted_p50_us"] / 1000,
                "admitted_p99_ms": r["admitted_p99_us"] / 1000,
                "admitted_rps_runs": r["admitted_rps_runs"],
                "ratio": ratio, "target": "≥ 0.90 of no shedding",
                "met": None if ratio is None or variant != "default" else ratio >= 0.9,
            })
        unshed = floods.get(f"flood_catalog_uncapped_{b}")
        for variant, label in (("default", "as shipped, clients wait Retry-After"),
                               ("uncapped", "no shedding"),
                               ("impatient", "as shipped, clients retry at once")):
            r = floods.get(f"flood_catalog_{variant}_{b}")
            if not r:
                continue
            p99 = r["admitted_p99_us"] / 1000
            ratio = p99 / (unshed["admitted_p99_us"] / 1000) if unshed else None
            row = flood_row(f"flood_catalog_{variant}_{b}", b, "catalog GET flood", label, r,
                            f"admitted p99 ≤ {FLOOD_P99_RATIO:.2f} of no shedding's",
                            None if ratio is None or variant != "default"
                            else ratio <= FLOOD_P99_RATIO)
            out.append(row | {"ratio": ratio})
        for key, label in ((f"flood_sign_in_{b}", "as shipped, clients wait Retry-After"),
                           (f"flood_sign_in_impatient_{b}", "as shipped, clients retry at once")):
            r = floods.get(key)
            if not r:
                continue
            # 16 sign-ins per sign-in slot (2 per CPU) are let in: the admitted ones wait
            # behind at most that many, at the rate the machine hashes.
            queue = 16 * 2 * (os.cpu_count() or 1)
            bound = 1.5 * 1000 * queue / max(r["admitted_rps"], 1e-9)
            p99 = r["admitted_p99_us"] / 1000
            out.append(flood_row(key, b, "sign-in flood", label, r,
                                 f"admitted p99 < 1.5 × {queue} ÷ admitted/s = {bound:,.0f} ms",
                                 p99 < bound))
    return out


def scenarios(runs, ceilings, small, large, page, rss_conns):
    """(key, label, measured value, unit, ceiling value, ceiling label, target, kind).

    Only the scenarios that ran (a partial run, BENCH_SCENARIOS, has some of them)."""
    out = []
    hello = runs.get("ceiling_hello", {}).get("rps")
    pg_select = ceilings.get("pg_select", {}).get("tps")
    pg_write = ceilings.get("pg_token_write", {}).get("tps")

    def rps(key):
        return runs[key]["rps"] if key in runs else None

    for b in ("sqlite", "postgres"):
        # The mean of the hash rates measured right before and right after this backend's
        # sign-ins (either one alone if the other is missing).
        around = [ceilings.get(k, {}).get("hashes_per_second")
                  for k in (f"argon2_{b}", f"argon2_after_{b}")]
        around = [r for r in around if r]
        argon2_b = sum(around) / len(around) if around else None
        pub = rps(f"describe_public_{b}")
        describe_ceiling = (hello, "hello-JSON") if b == "sqlite" else (pg_select, "pgbench -S")
        small_rps = rps(f"catalog_small_{b}")
        scan = ceilings.get(f"scan_small_{b}", {}).get("rows_per_second")
        write = (pg_write, "pgbench write script") if b == "postgres" else (None, "— (PostgreSQL only)")
        rows = [
            # Issue 22's targets.
            (f"describe_public_{b}", f"describe GET, public object, {b}", pub, "req/s",
             *describe_ceiling, 0.50 if b == "sqlite" else 0.45, "ratio"),
            (f"describe_bearer_{b}", f"describe GET with a bearer token, {b}",
             rps(f"describe_bearer_{b}"), "req/s", pub, "public describe", 0.90, "ratio"),
            # On SQLite introspection's target is against oidc-provider, measured by
            # ../shared/peer-bench/run.sh, not here: the ratio is shown without a verdict.
            (f"introspect_{b}", f"introspection (RFC 7662) of an access token, {b}",
             rps(f"introspect_{b}"), "req/s", pub, "public describe",
             0.85 if b == "postgres" else None, "ratio"),
            (f"catalog_small_{b}", f"catalog GET, {small} objects, {b} (rows/s)",
             None if small_rps is None else small_rps * small, "rows/s", scan,
             "SQLite scan (diesel, 1 thread)" if b == "sqlite" else "PG scan (pgbench, 8 clients)",
             0.25, "ratio"),
            (f"catalog_large_{b}", f"catalog GET, {large} objects, {b}",
             rps(f"catalog_large_{b}"), "req/s", None, "—", 250.0, "p99"),
            (f"catalog_large_paged_{b}",
             f"catalog GET, {large} objects, pages of {page} (per page), {b}",
             rps(f"catalog_large_paged_{b}"), "req/s", None, "—", 250.0, "p99"),
            (f"token_refresh_{b}", f"token endpoint, refresh_token grant, {b}",
             rps(f"token_refresh_{b}"), "req/s", *write, 0.50, "ratio"),
            (f"token_code_{b}", f"token endpoint, authorization_code grant, {b}",
             rps(f"token_code_{b}"), "req/s", *write, 0.40, "ratio"),
            (f"login_{b}", f"local SSO login (argon2id), {b}", rps(f"login_{b}"),
             "req/s", argon2_b, "argon2id hashes/s × cores, before and after", 0.90, "ratio"),
            (f"rss_{rss_conns}_{b}", f"server RSS, {rss_conns} connections, {b}",
             rps(f"rss_{rss_conns}_{b}"), "req/s", None, "—", 64.0, "rss"),
            (f"catalog_rss_{b}", catalog_rss_label(runs.get(f"catalog_rss_{b}"), small, b),
             rps(f"catalog_rss_{b}"), "req/s", None, "—", 128.0, "rss"),
        ]
        out += [r for r in rows if r[0] in runs]
    return out


def catalog_rss_label(run, small, backend):
    """The many-connection catalog memory scenario: its connections, and how many answers were
    200 when some were shed (503)."""
    if not run:
        return ""
    shed = ""
    if run["ok_rps"] < run["rps"] * 0.999:
        shed = f" ({run['ok_rps']:,.0f} answers of 200 a second, the rest 503)"
    return (f"server RSS, catalog GET of {small} objects, {run['connections']} connections{shed}, "
            f"{backend}")


MET = {True: "yes", False: "**no**", None: "—"}


def shed_table(md, header, rows, text_columns=2):
    """Appends a Markdown table to `md`: text columns left (the first `text_columns`), figures
    right."""
    md.append("| " + " | ".join(header) + " |")
    md.append("|" + "|".join("---" if i < text_columns or h in ("target", "met?") else "---:"
                             for i, h in enumerate(header)) + "|")
    for row in rows:
        md.append("| " + " | ".join(str(c) for c in row) + " |")
    md.append("")


# What the harness's scripts write: a run's own changes, not the working tree's.
RUN_OUTPUTS = ("bench/results.json", "bench/results-media.json", "bench/results-pipeline.json",
               "docs/performance.md")


def provenance(outputs=RUN_OUTPUTS):
    """The short HEAD commit and what the page's commit line adds to it: whether tracked
    files other than the run's own `outputs` differ from that commit, and the binary
    measured when BENCH_BINARY named one (the harness cannot tell which commit that binary
    was built from, so the line gives its name and build time instead of claiming HEAD's)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def git(*args):
        try:
            return subprocess.run(["git", "-C", root, *args], capture_output=True,
                                  text=True, check=False).stdout.strip()
        except OSError:
            return ""
    commit = git("rev-parse", "--short", "HEAD")
    notes = []
    if git("status", "--porcelain", "--untracked-files=no", "--", ".",
           *[f":(exclude){o}" for o in outputs]):
        notes.append("plus the working tree")
    binary = os.environ.get("BENCH_BINARY", "")
    if binary:
        try:
            built = datetime.datetime.fromtimestamp(
                os.stat(binary).st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        except OSError:
            built = "unknown"
        notes.append(f"the binary `{os.path.basename(binary)}` from `BENCH_BINARY`, built {built}")
    return commit, (f" ({'; '.join(notes)})" if notes else "")


def fmt(x, digits=0):
    if x is None:
        return "—"
    return f"{x:,.{digits}f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("results")
    p.add_argument("out_json")
    p.add_argument("out_md")
    for opt in ("command", "duration", "flood-duration", "warmup", "reps", "connections",
                "catalog-connections", "threads", "small", "large", "page", "smoke"):
        p.add_argument(f"--{opt}", default="")
    a = p.parse_args()
    runs, ceilings, floods = load(a.results)
    shed_rows = shedding(floods)
    shed_wrk_rows = shedding_wrk(runs)
    rss_conns = next((k.split("_")[1] for k in runs if k.startswith("rss_")), "256")
    rows = []
    for key, label, value, unit, ceiling, clabel, target, kind in scenarios(
        runs, ceilings, int(a.small), int(a.large), a.page or "1000", rss_conns
    ):
        r = runs.get(key, {})
        ratio = value / ceiling if ceiling and kind == "ratio" else None
        if kind == "ratio" and target is None:
            met, target_text = None, "— (peer bench)"
        elif kind == "ratio":
            met = None if ratio is None else ratio >= target
            target_text = f"≥ {target:.2f}"
        elif kind == "p99":
            met = r["p99_ms"] < target
            target_text = f"p99 < {target:.0f} ms"
        else:
            met = r["rss_peak_mib"] < target
            target_text = f"RSS < {target:.0f} MiB"
        rows.append({
            "scenario": key, "label": label, "value": value, "unit": unit,
            "rps": r.get("rps"), "p50_ms": r.get("p50_ms"), "p99_ms": r.get("p99_ms"),
            "rps_runs": r.get("rps_runs"), "connections": r.get("connections"),
            "rss_peak_mib": r.get("rss_peak_mib"), "vmhwm_mib": r.get("vmhwm_mib"),
            "bytes_per_response": r.get("bytes_per_response"),
            "pool_exhausted": r.get("pool_exhausted"),
            "ceiling": ceiling, "ceiling_label": clabel, "ratio": ratio,
            "target": target_text, "met": met,
        })
    commit, provenance_note = provenance()
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = {"cpu": cpu, "cpus": os.cpu_count(), "kernel": platform.release()}
    settings = {k: getattr(a, k.replace("-", "_")) for k in (
        "duration", "warmup", "reps", "connections", "catalog-connections", "threads",
        "small", "large", "page")}
    doc = {"date": now, "command": a.command.strip(), "commit": commit, "machine": machine,
           "settings": settings, "scenarios": rows, "ceilings": ceilings,
           "ceiling_hello": runs.get("ceiling_hello"),
           "server_vmhwm_kib": {k: v for k, v in ceilings.items() if k.startswith("server_")},
           "token_table_scans": table_scans(a.results), "shedding": shed_rows,
           "shedding_wrk": shed_wrk_rows}
    with open(a.out_json, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    analysis = "<!-- analysis -->\n_No analysis written yet._\n<!-- /analysis -->\n"
    # bench/media.sh's section (its own run, its own markers): kept as it is.
    media = ""
    processing = ""
    if os.path.exists(a.out_md):
        old = open(a.out_md).read()
        start, end = old.find("<!-- analysis -->"), old.find("<!-- /analysis -->")
        if start >= 0 and end > start:
            analysis = old[start : end + len("<!-- /analysis -->")] + "\n"
        start, end = old.find("<!-- media -->"), old.find("<!-- /media -->")
        if start >= 0 and end > start:
            media = old[start : end + len("<!-- /media -->")] + "\n"
        start, end = old.find("<!-- processing -->"), old.find("<!-- /processing -->")
        if start >= 0 and end > start:
            processing = old[start : end + len("<!-- /processing -->")] + "\n"

    md = []
    md.append("# Performance\n")
    md.append(
        "Measured by the benchmark harness, `bench/run.sh` (issue 7). Absolute figures on a "
        "shared 2-core machine are noise; the **ratio** to a ceiling measured in the same run "
        "is what the targets are about. Regenerate this page (the table, the settings and "
        "`bench/results.json`) with `bench/run.sh all`; the analysis section is kept.\n"
    )
    md.append(f"- **Date:** {now}; **command:** `{a.command.strip()}`; **commit:** `{commit}`"
              f"{provenance_note}")
    md.append(f"- **Machine:** {cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}; wrk, "
              "the server and the ceilings share these CPUs")
    md.append(f"- **Runs:** wrk -t{a.threads}, keep-alive, {a.connections} connections "
              f"({a.catalog_connections} for the catalog, {rss_conns} for the RSS scenario), "
              f"{a.warmup} s warm-up then {a.reps} × {a.duration} s; the median run by req/s "
              "gives req/s, p50 and p99. Any answer outside 2xx (303 for the sign-in form, 503 in the "
              "many-connection catalog memory scenario) fails "
              "the run.")
    md.append("- **medialib:** release build, `medialib serve` with its defaults (actix-web "
              "workers = CPUs, r2d2 pool of 8), `MEDIALIB_CODE_TTL=3600`, rate limits off; "
              "seeded through the CLI and the HTTP API (`bench/seed.py`). PostgreSQL on loopback "
              "is reached without TLS, by medialib (its default there, docs/operations.md) and "
              "by pgbench for the ceilings alike.\n")
    md.append("## Results\n")
    md.append("| scenario | req/s | p50 ms | p99 ms | measured | ceiling | ratio | target | met? |")
    md.append("|---|---:|---:|---:|---:|---|---:|---|---|")
    for r in rows:
        measured = f"{fmt(r['value'])} {r['unit']}"
        if r["target"].startswith("RSS"):
            measured = f"peak RSS {r['rss_peak_mib']:.1f} MiB"
        elif r["target"].startswith("p99"):
            measured = f"peak RSS {r['rss_peak_mib']:.1f} MiB"
        ceiling = "—" if r["ceiling"] is None else f"{fmt(r['ceiling'])} ({r['ceiling_label']})"
        if r["ceiling"] is None and r["ceiling_label"] != "—":
            ceiling = r["ceiling_label"]
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        if r["pool_exhausted"]:
            met += " (pool ran dry: lower bound)"
        md.append(f"| {r['label']} | {fmt(r['rps'])} | {fmt(r['p50_ms'], 2)} | "
                  f"{fmt(r['p99_ms'], 1)} | {measured} | {ceiling} | "
                  f"{fmt(r['ratio'], 2)} | {r['target']} | {met} |")
    md.append("")
    cpu_table(md, runs, ceilings)
    if shed_rows:
        md.append("## Load shedding\n")
        md.append("Timed by `bench/hello`'s `flood` client, which keeps the latency of admitted "
                  "answers apart from the refused (503) ones, after 1 s of warm-up, "
                  f"{a.reps} runs of {a.flood_duration or a.duration} s; the same "
                  "database, a server started with each setting. The describe GET is a load "
                  "this machine serves; the sign-in flood one it cannot (argon2id). "
                  "See docs/reliability.md.\n")
        shed_table(md, ["load", "setting", "connections", "admitted req/s", "refused req/s",
                        "admitted p50 ms", "admitted p99 ms", "ratio", "target", "met?"],
                   [[f"{r['load']}, {r['backend']}", r["label"], r["connections"],
                     fmt(r["admitted_rps"]), fmt(r["refused_rps"]),
                     fmt(r["admitted_p50_ms"], 2), fmt(r["admitted_p99_ms"], 1),
                     fmt(r["ratio"], 2), r["target"], MET[r["met"]]] for r in shed_rows])
    if shed_wrk_rows:
        md.append("The same servable load driven by wrk (`bench/wrk/get_shed.lua`), whose "
                  "latencies mix the 200s and the 503s:\n")
        shed_table(md, ["load", "setting", "connections", "answers/s", "200s/s", "p50 ms",
                        "p99 ms", "ratio of 200s/s", "met?"],
                   [[f"describe GET, {r['backend']}", r["variant"], r["connections"],
                     fmt(r["rps"]), fmt(r["ok_rps"]), fmt(r["p50_ms"], 2), fmt(r["p99_ms"], 1),
                     fmt(r["ratio"], 2), MET[r["met"]]] for r in shed_wrk_rows])
    md.append("## Ceilings\n")
    hello = runs.get("ceiling_hello")
    if hello:
        md.append(f"- hello-JSON actix-web (`bench/hello`, same worker count): "
                  f"{fmt(hello['rps'])} req/s, p50 {hello['p50_ms']:.2f} ms, "
                  f"p99 {hello['p99_ms']:.1f} ms")
    for name, c in sorted(ceilings.items()):
        if name.startswith("server_"):
            md.append(f"- medialib peak RSS over the whole {name[7:]} run (VmHWM): "
                      f"{c['vmhwm_kib'] / MIB:.1f} MiB")
        else:
            md.append(f"- {name}: `{json.dumps(c)}`")
    scans = doc["token_table_scans"]
    if scans:
        md.append("")
        md.append("## Token tables' scans during the token scenarios\n")
        md.append("From `pg_stat_user_tables`, reset before the token scenarios (statistics "
                  "refreshed with ANALYZE after each pool is minted): an index scan per lookup "
                  "is the plan the token endpoint is built for.\n")
        for backend, tables in sorted(scans.items()):
            for rel, c in sorted(tables.items()):
                md.append(f"- {backend}, {rel}: {c['idx_scan']} index scans, {c['seq_scan']} "
                          f"sequential scans reading {c['seq_tup_read']} rows")
    md.append("")
    if media:
        md.append(media)
    if processing:
        md.append(processing)
    md.append("## Analysis\n")
    md.append(analysis)
    with open(a.out_md, "w") as f:
        f.write("\n".join(md))


if __name__ == "__main__":
    main()
