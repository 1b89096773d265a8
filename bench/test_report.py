"""Unit tests of the bench reports' own logic (run by .ci/run: `python3 -m unittest discover
-s bench -p 'test_*.py'`).

`provenance()` names what a page of docs/performance.md measured. It reads git in the
repository that holds the script, so each test copies report.py into a fresh repository of
its own (bench/report.py, a README and the run's outputs, committed) and changes it there.
"""

import importlib.util
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))


def git(root, *args):
    subprocess.run(["git", "-C", root, *args], check=True, capture_output=True, text=True)


class Provenance(unittest.TestCase):
    def setUp(self):
        # Git reads the caller's environment and configuration: a GIT_DIR would point the
        # throwaway repository's commits at the caller's, a global commit.gpgsign or hooks
        # path would change what a commit does. The tests' git, and provenance()'s, see none
        # of it; patch.dict gives the caller's environment back after each test.
        env = mock.patch.dict(os.environ)
        env.start()
        self.addCleanup(env.stop)
        for name in [n for n in os.environ if n.startswith("GIT_")] + ["BENCH_BINARY"]:
            os.environ.pop(name, None)
        os.environ["GIT_CONFIG_GLOBAL"] = os.devnull
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        self.root = tempfile.mkdtemp(prefix="bench-report-test-")
        self.addCleanup(shutil.rmtree, self.root)
        os.makedirs(os.path.join(self.root, "bench"))
        os.makedirs(os.path.join(self.root, "docs"))
        shutil.copy(os.path.join(HERE, "report.py"), os.path.join(self.root, "bench"))
        for name in ("README.md", "bench/results.json", "docs/performance.md"):
            self.write(name, "before\n")
        git(self.root, "init", "-q")
        git(self.root, "add", "-A")
        git(self.root, "-c", "user.name=t", "-c", "user.email=t@example.invalid",
            "commit", "-qm", "first")
        spec = importlib.util.spec_from_file_location(
            "report_under_test", os.path.join(self.root, "bench", "report.py"))
        self.report = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.report)
        self.head = subprocess.run(["git", "-C", self.root, "rev-parse", "--short", "HEAD"],
                                   check=True, capture_output=True, text=True).stdout.strip()

    def write(self, name, text):
        with open(os.path.join(self.root, name), "w") as f:
            f.write(text)

    def test_a_clean_tree_adds_nothing(self):
        self.assertEqual(self.report.provenance(), (self.head, ""))

    def test_the_runs_own_outputs_do_not_count_as_the_working_tree(self):
        self.write("bench/results.json", "after\n")
        self.write("docs/performance.md", "after\n")
        self.assertEqual(self.report.provenance(), (self.head, ""))

    def test_another_changed_file_is_the_working_tree(self):
        # The positive control of the test above: the same check sees a change elsewhere.
        self.write("README.md", "after\n")
        self.assertEqual(self.report.provenance(), (self.head, " (plus the working tree)"))

    def test_untracked_files_do_not_count(self):
        self.write("notes.txt", "scratch\n")
        self.assertEqual(self.report.provenance(), (self.head, ""))

    def test_a_named_binary_is_named_with_its_build_time(self):
        binary = os.path.join(self.root, "medialib-abc")
        self.write("medialib-abc", "")
        os.utime(binary, (0, 1764633600))  # 2025-12-02 00:00 UTC
        os.environ["BENCH_BINARY"] = binary
        self.write("README.md", "after\n")
        self.assertEqual(
            self.report.provenance(),
            (self.head, " (plus the working tree; the binary `medialib-abc` from "
                        "`BENCH_BINARY`, built 2025-12-02 00:00 UTC)"))

    def test_a_missing_binary_has_an_unknown_build_time(self):
        os.environ["BENCH_BINARY"] = os.path.join(self.root, "gone")
        self.assertEqual(
            self.report.provenance(),
            (self.head, " (the binary `gone` from `BENCH_BINARY`, built unknown)"))


if __name__ == "__main__":
    unittest.main()
