"""Where the microseconds of a request go, over the whole machine, from a system-wide profile.

Usage:
    perf record -a -F FREQ -o OUT -- sleep SECONDS     # while the load runs
    perf script -i OUT -F pid,tid,comm,ip,sym,dso | python3 bench/perf_split.py \
        --freq FREQ --requests N [--label PID=NAME ...] [--top K]

Every sample is one CPU busy for 1/FREQ s, so a process's samples ÷ FREQ ÷ N is its CPU per
request (the idle task's samples are the CPUs' idle time). Samples are grouped by process (a
PID given with --label, else the process's command name as perf saw it) and, within each, by
what the code does (the symbol's name and object: scheduling, TCP, system-call entry, memory
copies, malloc, SQLite, diesel, actix and tokio, JSON, hashing, medialib's own crates, ...).
Prints a Markdown table: process, category, µs per request, share of all samples. With --top K
it also lists each process's K hottest symbols.
"""

import argparse
import collections
import re
import sys

# (category, pattern on "symbol dso"); the first match wins, so the specific ones come first.
CATEGORIES = [
    ("idle", r"^(do_idle|cpu_idle|default_idle|intel_idle|acpi_idle|cpuidle|poll_idle|"
             r"native_safe_halt|pv_native_safe_halt|arch_cpu_idle|mwait_idle|"
             r"cpu_startup_entry|\[idle\])"),
    ("scheduling and wake-ups", r"^(__schedule|schedule|finish_task_switch|try_to_wake_up|"
                                r"_raw_spin_unlock_irqrestore|_raw_spin_lock|"
                                r"futex_|__futex|pick_next|enqueue_|dequeue_|update_curr|"
                                r"update_load|select_task_rq|ttwu_|psi_|"
                                r"__switch_to|switch_mm|__sched|sched_|native_sched_clock|"
                                r"wake_up|__wake_up|autoremove_wake|ep_poll|do_epoll|"
                                r"ep_send_events|ep_item_poll|__x64_sys_epoll|"
                                r"syscall_exit_to_user_mode_prepare|exit_to_user_mode_loop|"
                                r"prepare_task_switch|irqentry_exit|reweight|account_)"),
    ("TCP and loopback", r"^(tcp_|__tcp|inet_|ip_|__ip|ipv4_|ip6_|sock_|__sock|sk_|__sk_|"
                         r"skb_|__skb|kfree_skb|alloc_skb|__alloc_skb|__dev_queue|dev_|"
                         r"__netif|netif_|net_rx|__napi|napi_|process_backlog|loopback_|"
                         r"__x64_sys_sendto|__x64_sys_recvfrom|__sys_sendto|__sys_recvfrom|"
                         r"__x64_sys_sendmsg|__sys_sendmsg|____sys_sendmsg|___sys_sendmsg|"
                         r"__x64_sys_write|__x64_sys_read|ksys_write|ksys_read|"
                         r"sock_sendmsg|sock_recvmsg|security_socket|release_sock|lock_sock|"
                         r"__release_sock|do_softirq|__do_softirq|__local_bh_enable|"
                         r"nf_|validate_xmit|__copy_skb|skb_copy|csum_|__inet|"
                         r"selinux_socket|bpf_|__cgroup_bpf|mem_cgroup_charge_skmem|"
                         r"__sk_mem|sk_forced|ep_poll_callback)"),
    ("memory copies", r"^(__memmove|__memcpy|memcpy|memmove|rep_movs|copy_user|_copy_to_iter|"
                      r"_copy_from_iter|copy_to_user|copy_from_user|__memset|memset|"
                      r"clear_page|copy_page|__memcmp|memcmp|bcmp|__strlen|strlen)"),
    ("file system and page cache", r"^(ext4_|jbd2|filemap_|__filemap|generic_perform_write|"
                                   r"generic_file|iomap_|folio_|__folio|mark_buffer|"
                                   r"block_|__block|xas_|find_get|page_cache|"
                                   r"vfs_|__vfs|ksys_pread|ksys_pwrite|__x64_sys_pread|"
                                   r"__x64_sys_pwrite|__x64_sys_fsync|__x64_sys_fdatasync|"
                                   r"do_fsync|file_write_and_wait|__x64_sys_fcntl|do_fcntl|"
                                   r"fcntl_setlk|posix_lock|locks_|__x64_sys_newfstatat|"
                                   r"vfs_fstat|vfs_statx|__do_sys_newfstatat|"
                                   r"security_file|fsnotify|__fsnotify|touch_atime|atime|"
                                   r"inode_|file_update_time|down_write|up_write|"
                                   r"rw_verify_area)"),
    ("memory management", r"^(handle_mm_fault|__handle_mm_fault|do_anonymous_page|"
                          r"do_user_addr_fault|exc_page_fault|asm_exc_page_fault|"
                          r"__alloc_pages|get_page_from_freelist|alloc_pages|__rmqueue|"
                          r"kmem_cache_|__kmem_cache|kmalloc|__kmalloc|kfree|__slab|slab_|"
                          r"___slab|free_unref|__free_pages|free_pages|release_pages|"
                          r"zap_|unmap_|__mmap|do_mmap|mmap_region|__x64_sys_munmap|"
                          r"__x64_sys_madvise|madvise|__vm_munmap|vma_|lru_|mod_memcg|"
                          r"__mod_memcg|__mod_lruvec|mod_lruvec|memcg_|__memcg|"
                          r"__count_memcg|obj_cgroup|refill_obj|tlb_|flush_tlb|"
                          r"native_flush_tlb|__pte|pte_|__pmd|page_remove|folio_add)"),
    ("system-call entry and exit", r"^(entry_SYSCALL|do_syscall_64|syscall_return|"
                                   r"syscall_exit|__x64_sys_|x64_sys_call|"
                                   r"entry_SYSRETQ|__entry_text|native_irq_return|"
                                   r"syscall_trace|__audit|audit_|fpregs_|"
                                   r"restore_fpregs|switch_fpu|__fdget|fput|__fget|"
                                   r"fdget|apparmor|security_|ktime_get|__rcu|rcu_|"
                                   r"irq_|asm_sysvec|sysvec_|__sysvec|hrtimer|"
                                   r"timerqueue|tick_|clockevents|lapic|"
                                   r"native_write_msr|native_read_msr|__cond_resched|"
                                   r"_raw_|raw_spin|queued_spin|__x86_indirect|"
                                   r"__put_user|__get_user|check_preemption|"
                                   r"srso_|retbleed|__x86_return)"),
    ("malloc and free", r"^(malloc|free|cfree|_int_malloc|_int_free|_int_realloc|realloc|"
                        r"calloc|__libc_malloc|__libc_free|__libc_calloc|__libc_realloc|"
                        r"malloc_consolidate|tcache|__rust_alloc|__rust_dealloc|"
                        r"__rust_realloc|__rdl_|__rg_|alloc::alloc|unlink_chunk|"
                        r"arena_get|_int_memalign|__posix_memalign|aligned_alloc)"),
    ("SQLite", r"(^sqlite3|^pcache1|^pager|^btree|^vdbe|^wal|^unix[A-Z]|^robust_|^osRead|"
               r"^osWrite|^seekAndRead|^seekAndWrite|^balance|^moveTo|^getAndInitPage|"
               r"^insertCell|^dropCell|^fillInCell|^decodeFlags|^cellSize|^computeNumeric|"
               r"^btreeParse|^allocateSpace|^accessPayload|^zeroPage|^pageFind)"),
    ("PostgreSQL (the server's code)", r" (postgres|/usr/lib/postgresql/\S+)$"),
    ("TLS (OpenSSL) and libpq", r" \S*(libpq|libssl|libcrypto)\S*$"),
    ("libc (other)", r" \S*libc\S*$"),
    ("wrk and LuaJIT", r"\S*(wrk|luajit|libluajit)\S*$|^lj_|^lua"),
    ("the kernel (other)", r"\[kernel\.kallsyms\]$"),
]
COMPILED = [(name, re.compile(p)) for name, p in CATEGORIES]

# Rust code goes by the crate its symbol is in (the implementing type's, or for a standard
# type the trait's: `<alloc::vec::Vec<T> as serde::Serialize>::serialize` is serde's).
CRATES = [
    ("medialib's own crates", ("medialib",)),
    ("diesel and r2d2", ("diesel", "r2d2", "libsqlite3_sys")),
    ("HTTP (actix, http, the router's regex)", ("actix", "http", "httparse", "h2", "bytes",
                                                "bytestring", "url", "percent_encoding",
                                                "mime", "cookie", "regex", "memchr",
                                                "aho_corasick", "form_urlencoded", "idna")),
    ("tokio and futures", ("tokio", "futures", "mio", "parking_lot", "crossbeam", "socket2",
                           "slab", "pin_project", "local_waker", "local_channel")),
    ("tracing and metrics", ("tracing", "metrics", "prometheus", "sharded_slab")),
    ("JSON (serde)", ("serde", "itoa", "ryu")),
    ("hashing and signatures (SHA-2, HMAC, argon2)", ("sha2", "hmac", "digest", "argon2",
                                                      "blake2", "block_buffer", "subtle",
                                                      "base64", "hex", "constant_time_eq")),
    ("Rust core and std (fmt, strings, collections)", ("core", "alloc", "std", "hashbrown",
                                                        "smallvec", "uuid", "time",
                                                        "indexmap", "once_cell", "rand")),
]
CRATE_RE = re.compile(r"^[<&]*(?:dyn )?([A-Za-z_][A-Za-z0-9_]*)::")
AS_TRAIT_RE = re.compile(r" as ([A-Za-z_][A-Za-z0-9_]*)::")


def rust_category(sym):
    m = CRATE_RE.match(sym) or AS_TRAIT_RE.search(sym)
    if not m:
        return None
    crate = m.group(1)
    if crate in ("core", "alloc", "std") and not sym.startswith("core::ptr::drop_in_place"):
        t = AS_TRAIT_RE.search(sym)
        if t and t.group(1) not in ("core", "alloc", "std"):
            crate = t.group(1)
    for name, prefixes in CRATES:
        if any(crate == p or crate.startswith(p + "_") for p in prefixes):
            return name
    return "Rust (other crates)"


def category(sym, dso):
    key = f"{sym} {dso}"
    for name, pattern in COMPILED:
        if name.startswith("libc") or name.startswith("wrk") or name.startswith("the kernel"):
            break
        if pattern.search(key):
            return name
    rust = rust_category(sym)
    if rust:
        return rust
    for name, pattern in COMPILED:
        if pattern.search(key):
            return name
    return "other"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--freq", type=float, required=True, help="perf record -F")
    p.add_argument("--requests", type=float, required=True,
                   help="requests answered while perf recorded")
    p.add_argument("--label", action="append", default=[], help="PID=NAME")
    p.add_argument("--top", type=int, default=0)
    a = p.parse_args()
    labels = dict(x.split("=", 1) for x in a.label)
    # One line a sample: "comm pid/tid ip sym (dso)" in perf script's layout.
    line_re = re.compile(r"^\s*(?P<comm>.+?)\s+(?P<pid>\d+)/(?P<tid>\d+)\s+"
                         r"(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
    counts = collections.Counter()
    symbols = collections.defaultdict(collections.Counter)
    total = 0
    unparsed = 0
    for line in sys.stdin:
        m = line_re.match(line)
        if not m:
            if line.strip():
                unparsed += 1
            continue
        pid = m["pid"]
        process = labels.get(pid) or ("idle" if pid == "0" else m["comm"].split(":")[0])
        sym = re.sub(r"\+0x[0-9a-f]+$", "", m["sym"]) or "[unknown]"
        cat = "idle" if pid == "0" else category(sym, m["dso"])
        counts[(process, cat)] += 1
        symbols[process][(sym, m["dso"].rsplit("/", 1)[-1], cat)] += 1
        total += 1
    if not total:
        sys.exit("no samples read (perf script -F pid,tid,comm,ip,sym,dso expected)")
    per_process = collections.Counter()
    for (process, _), n in counts.items():
        per_process[process] += n
    us = 1e6 / a.freq / a.requests
    print(f"{total} samples at {a.freq:g} Hz, {a.requests:g} requests: "
          f"{total / a.freq / a.requests * 1e6:.1f} CPU-µs a request in all"
          + (f" ({unparsed} lines not parsed)" if unparsed else ""))
    print()
    print("| process | what | µs a request | share |")
    print("|---|---|---:|---:|")
    for process, n in per_process.most_common():
        print(f"| **{process}** | all | **{n * us:.1f}** | **{n / total:.1%}** |")
        cats = sorted(((c, k) for (pr, k), c in counts.items() if pr == process), reverse=True)
        for c, k in cats:
            if c / total >= 0.001:
                print(f"| {process} | {k} | {c * us:.1f} | {c / total:.1%} |")
    if a.top:
        for process, _ in per_process.most_common():
            if process == "idle":
                continue
            print(f"\n{process}: hottest symbols")
            for (sym, dso, cat), c in symbols[process].most_common(a.top):
                print(f"  {c * us:7.2f} µs  {c / total:6.2%}  {cat}  {sym} ({dso})")


if __name__ == "__main__":
    main()
