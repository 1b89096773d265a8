//! Running ffmpeg and ffprobe as child processes: at a lower CPU priority, with ffmpeg's
//! `-progress` lines read as they come, and a watchdog that ends a child whose progress stopped.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use medialib_domain::media::probe::MediaDuration;
use medialib_domain::media::progress::{Percent, ProgressMeter};
use medialib_ports::processing::{ProgressSink, ToolFailure};

/// How much of a tool's standard error is kept for messages.
const STDERR_TAIL: usize = 4096;
/// How often the watchdog looks when nothing arrives.
const TICK: Duration = Duration::from_millis(100);

/// How the tools are started.
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    /// `nice` niceness (0: run at the caller's priority).
    pub niceness: u8,
    /// Also `SCHED_IDLE` (with a niceness above 0).
    pub idle_class: bool,
    /// Longest time without progress before the child is ended.
    pub stall_timeout: Duration,
}

/// How a run ended when it did not succeed.
#[derive(Debug)]
pub(crate) enum RunFailure {
    /// The tool exited non-zero (or was killed by a signal we did not send).
    Exit {
        /// Its status.
        status: ExitStatus,
        /// The end of what it wrote to standard error.
        stderr: String,
    },
    /// The watchdog ended it.
    Stalled,
    /// The sink asked to stop; it was ended.
    Stopped,
    /// It could not be started or waited for.
    Io(std::io::Error),
}

impl RunFailure {
    /// As a tool failure, for the variants that are one.
    pub(crate) fn into_tool_failure(self, tool: &'static str) -> ToolFailure {
        let reason = match self {
            Self::Exit { status, stderr } => {
                let last = last_line(&stderr);
                if last.is_empty() {
                    format!("{status}")
                } else {
                    format!("{status}: {last}")
                }
            }
            Self::Stalled => "it made no progress and was ended".to_owned(),
            Self::Stopped => "it was stopped".to_owned(),
            Self::Io(e) => format!("cannot run it: {e}"),
        };
        ToolFailure { tool, reason }
    }
}

/// The last non-empty line of a tool's message.
pub(crate) fn last_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or_default()
}

/// util-linux's `setpriv` (on every Debian), which sets the parent-death signal and then
/// executes the tool: when the worker dies (`kill -9`), the kernel kills its tools too, instead
/// of leaving an orphaned ffmpeg encoding on for nobody (the workspace forbids the `unsafe`
/// that `prctl(PR_SET_PDEATHSIG)` in a `pre_exec` hook would need).
const SETPRIV: &str = "/usr/bin/setpriv";

/// util-linux's `chrt`, which puts the tool in the `SCHED_IDLE` class before executing it: it
/// then runs only on CPU time nothing else wants, so a transcode cannot slow serving (with
/// `nice` alone, x264's threads still took a quarter of describe's throughput on 2 cores:
/// bench/pipeline.sh).
const CHRT: &str = "/usr/bin/chrt";

impl Launcher {
    fn command(&self, program: &Path, work: Option<&Path>) -> Command {
        // Each wrapper executes the next in its own place: the child's pid is the tool's, so
        // ending the child ends the tool.
        let mut chain: Vec<OsString> = Vec::new();
        if Path::new(SETPRIV).exists() {
            chain.extend([SETPRIV, "--pdeathsig", "KILL"].map(OsString::from));
        }
        if self.niceness > 0 {
            if self.idle_class && Path::new(CHRT).exists() {
                chain.extend([CHRT, "--idle", "0"].map(OsString::from));
            }
            chain.extend(["nice".into(), "-n".into(), self.niceness.to_string().into()]);
        }
        chain.push(program.as_os_str().to_owned());
        let mut command = Command::new(&chain[0]);
        command.args(&chain[1..]);
        command.stdin(Stdio::null());
        command.stdout(Stdio::piped());
        command.stderr(Stdio::piped());
        if let Some(work) = work {
            command.current_dir(work);
        }
        command
    }

    /// Runs ffmpeg with `args` in `work`, reading `-progress pipe:1` (added here) against
    /// `total`, telling `sink` each new percentage, and ending ffmpeg when its position has not
    /// moved for the stall timeout (also after `progress=end`: a tool that hangs at 100 %).
    pub(crate) fn ffmpeg(
        &self,
        ffmpeg: &Path,
        work: &Path,
        args: &[OsString],
        total: Option<MediaDuration>,
        sink: &mut ProgressSink<'_>,
    ) -> Result<(), RunFailure> {
        let mut command = self.command(ffmpeg, Some(work));
        command.args([
            "-hide_banner",
            "-nostdin",
            "-v",
            "error",
            "-y",
            "-progress",
            "pipe:1",
            "-nostats",
        ]);
        command.args(args);
        tracing::debug!(?command, "running ffmpeg");
        let mut child = command.spawn().map_err(RunFailure::Io)?;
        let stderr = collect_tail(child.stderr.take());
        let (lines, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take();
        let reader = thread::spawn(move || {
            if let Some(stdout) = stdout {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if lines.send(line).is_err() {
                        break;
                    }
                }
            }
        });
        let mut meter = ProgressMeter::new(total);
        let mut told = None::<Percent>;
        let mut last_move = Instant::now();
        let outcome = loop {
            match rx.recv_timeout(TICK) {
                Ok(line) => {
                    if meter.observe(&line) {
                        last_move = Instant::now();
                        let percent = meter.percent();
                        if told != Some(percent) {
                            told = Some(percent);
                            if !sink(percent) {
                                break Err(RunFailure::Stopped);
                            }
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    // Standard output closed: the tool is exiting. Give it the stall
                    // timeout to do so.
                    break wait_until(&mut child, last_move + self.stall_timeout);
                }
            }
            if last_move.elapsed() >= self.stall_timeout {
                break Err(RunFailure::Stalled);
            }
        };
        let outcome = match outcome {
            Ok(status) => Ok(status),
            Err(failure) => {
                end(&mut child);
                Err(failure)
            }
        };
        let _ = reader.join();
        let stderr = stderr.join().unwrap_or_default();
        match outcome {
            Ok(status) if status.success() => {
                if !stderr.trim().is_empty() {
                    tracing::debug!(stderr = %stderr.trim(), "ffmpeg succeeded with messages");
                }
                Ok(())
            }
            Ok(status) => Err(RunFailure::Exit { status, stderr }),
            Err(failure) => Err(failure),
        }
    }

    /// Runs a tool that reports no progress (ffprobe) and returns its standard output and the
    /// tail of its standard error; ends it when it takes longer than the stall timeout.
    pub(crate) fn capture(
        &self,
        program: &Path,
        args: &[OsString],
    ) -> Result<(Vec<u8>, String), RunFailure> {
        let mut command = self.command(program, None);
        command.args(args);
        // The same debug line as `ffmpeg`'s: bench/pipeline.sh replays these commands.
        tracing::debug!(?command, "running ffprobe");
        let mut child = command.spawn().map_err(RunFailure::Io)?;
        let stderr = collect_tail(child.stderr.take());
        let stdout = child.stdout.take();
        let reader = thread::spawn(move || {
            let mut out = Vec::new();
            if let Some(mut stdout) = stdout {
                let _ = stdout.read_to_end(&mut out);
            }
            out
        });
        let outcome = wait_until(&mut child, Instant::now() + self.stall_timeout);
        if outcome.is_err() {
            end(&mut child);
        }
        let out = reader.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        match outcome {
            Ok(status) if status.success() => Ok((out, stderr)),
            Ok(status) => Err(RunFailure::Exit { status, stderr }),
            Err(failure) => Err(failure),
        }
    }
}

/// Waits for `child` to exit until `deadline`; [`RunFailure::Stalled`] after it.
fn wait_until(child: &mut Child, deadline: Instant) -> Result<ExitStatus, RunFailure> {
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if Instant::now() >= deadline => return Err(RunFailure::Stalled),
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(RunFailure::Io(e)),
        }
    }
}

/// Ends a child (SIGKILL) and reaps it.
fn end(child: &mut Child) {
    if let Err(e) = child.kill() {
        tracing::warn!(error = %e, "cannot end a media tool");
    }
    let _ = child.wait();
}

/// Reads a stream to its end on a thread of its own, keeping its last [`STDERR_TAIL`] bytes.
fn collect_tail(stream: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut tail = Vec::new();
        if let Some(mut stream) = stream {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(buf.get(..n).unwrap_or_default());
                if tail.len() > STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
        }
        String::from_utf8_lossy(&tail).into_owned()
    })
}

/// `file:` + the absolute path: ffmpeg then never reads a path as a protocol or a pattern.
pub(crate) fn file_url(path: &Path) -> Result<OsString, std::io::Error> {
    let absolute: PathBuf = std::fs::canonicalize(path)?;
    let mut url = OsString::from("file:");
    url.push(absolute.as_os_str());
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `false` (skip) only with `MEDIALIB_TEST_SKIP_FFMPEG=1`; without ffmpeg the tests fail.
    fn present() -> bool {
        if std::env::var("MEDIALIB_TEST_SKIP_FFMPEG").as_deref() == Ok("1") {
            return false;
        }
        let ok = Command::new("ffmpeg")
            .arg("-version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "ffmpeg is missing: install Debian's `ffmpeg`, or set MEDIALIB_TEST_SKIP_FFMPEG=1"
        );
        true
    }

    fn launcher(stall: Duration) -> Launcher {
        Launcher {
            niceness: 10,
            idle_class: true,
            stall_timeout: stall,
        }
    }

    #[test]
    fn tools_run_in_the_idle_class_and_die_with_their_worker_when_asked() {
        if !Path::new(CHRT).exists() || !Path::new(SETPRIV).exists() {
            return;
        }
        let policy = |idle_class: bool| {
            let launcher = Launcher {
                niceness: 10,
                idle_class,
                stall_timeout: Duration::from_secs(10),
            };
            // The wrappers execute `sh` in their place: `$$` is the tool's own pid.
            let mut command = launcher.command(Path::new("sh"), None);
            command.args(["-c", "chrt -p $$; nice"]);
            let out = command.output().unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let idle = policy(true);
        assert!(idle.contains("SCHED_IDLE"), "{idle}");
        assert!(idle.trim_end().ends_with("10"), "niceness 10: {idle}");
        let low = policy(false);
        assert!(low.contains("SCHED_OTHER"), "{low}");
        assert!(low.trim_end().ends_with("10"), "{low}");
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    /// ffmpeg encoding 2 s of a test picture to nothing, at its own pace or (`paced`) in
    /// real time, under a watchdog of `stall`.
    fn two_seconds_of_video(
        launcher: Launcher,
        work: &Path,
        paced: bool,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), RunFailure> {
        seconds_of_video(2, launcher, work, paced, progress)
    }

    fn seconds_of_video(
        seconds: u32,
        launcher: Launcher,
        work: &Path,
        paced: bool,
        progress: &mut ProgressSink<'_>,
    ) -> Result<(), RunFailure> {
        let source = format!("testsrc2=s=64x48:r=25:d={seconds}");
        let mut list = vec!["-f", "lavfi", "-i", &source, "-f", "null", "-"];
        if paced {
            list.insert(0, "-re");
        }
        launcher.ffmpeg(
            Path::new("ffmpeg"),
            work,
            &args(&list),
            Some(MediaDuration::from_secs(seconds.into())),
            progress,
        )
    }

    #[test]
    fn progress_is_told_as_it_moves_and_ends_at_100() {
        let work = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        two_seconds_of_video(
            launcher(Duration::from_secs(10)),
            work.path(),
            false,
            &mut |p| {
                seen.push(p.value());
                true
            },
        )
        .unwrap();
        assert_eq!(seen.last(), Some(&100), "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    }

    #[test]
    fn a_child_that_keeps_moving_outlives_a_short_stall_timeout() {
        // Positive control for the watchdog: `-re` paces 6 s of output over 6 s of wall time,
        // twice the 3 s stall timeout, but it never stops moving. In the normal scheduling
        // class: in the idle class, on a machine the rest of the suite keeps busy, the child
        // really does stop moving now and then (CI saw it killed as stalled), which is the
        // watchdog doing its job, not what this test is about. The timeout leaves room for a
        // slow start: with 1 s, CI on a 2-CPU machine twice saw ffmpeg's first progress come
        // later than that while the suite started its other tests.
        let work = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let launcher = Launcher {
            niceness: 0,
            idle_class: false,
            stall_timeout: Duration::from_secs(3),
        };
        seconds_of_video(6, launcher, work.path(), true, &mut |_| true).unwrap();
        assert!(started.elapsed() >= Duration::from_millis(4500));
    }

    #[test]
    fn the_sink_can_stop_a_run() {
        if !present() {
            return;
        }
        let work = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let result = launcher(Duration::from_secs(10)).ffmpeg(
            Path::new("ffmpeg"),
            work.path(),
            &args(&[
                "-re",
                "-f",
                "lavfi",
                "-i",
                "testsrc2=s=64x48:r=25:d=30",
                "-f",
                "null",
                "-",
            ]),
            Some(MediaDuration::from_secs(30)),
            &mut |p| p.value() < 2,
        );
        assert!(matches!(result, Err(RunFailure::Stopped)), "{result:?}");
        // Stopped, not run to its end: `-re` makes the run last 30 s. The bound is loose on
        // purpose; a CI run on a loaded machine once took 9.8 s to stop (a 5 s bound failed).
        assert!(started.elapsed() < Duration::from_secs(25));
    }

    #[test]
    fn a_failure_keeps_the_tools_last_words() {
        if !present() {
            return;
        }
        let work = tempfile::tempdir().unwrap();
        let result = launcher(Duration::from_secs(10)).ffmpeg(
            Path::new("ffmpeg"),
            work.path(),
            &args(&["-i", "file:/nonexistent/input", "-f", "null", "-"]),
            None,
            &mut |_| true,
        );
        let failure = result.unwrap_err().into_tool_failure("ffmpeg");
        assert!(
            failure.reason.contains("No such file or directory"),
            "{failure}"
        );
    }
}
