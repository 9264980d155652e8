"""Unit tests of helpers/pipeline/machine_load.py: the CPUs' busy share during a run."""
import time

from helpers.pipeline.machine_load import CpuSampler, cpu_times


def test_cpu_times_read_the_first_line_of_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    assert cpu_times(stat) == (150, 1000)  # idle and iowait are not busy
    stat.write_text("intr 5\n")
    assert cpu_times(stat) is None and cpu_times(tmp_path / "missing") is None


def test_the_sampler_gives_the_busy_share_of_each_interval(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  0 0 0 100 0 0 0 0\n")
    sampler = CpuSampler(interval=0.2, stat=stat).start()
    time.sleep(0.1)
    stat.write_text("cpu  75 0 0 125 0 0 0 0\n")  # 75 of the next 100 jiffies busy
    time.sleep(0.5)
    summary = sampler.stop()
    assert sampler.samples[0][1] == 0.75 and summary["samples"] == 1  # intervals with no jiffies are left out
    assert summary["seconds_at_90pct"] == 0 and 0 < summary["busy_mean"] <= 0.75
    sampler.write(tmp_path / "cpu.tsv")
    assert (tmp_path / "cpu.tsv").read_text().splitlines()[0] == "t_s\tbusy"


def test_without_proc_stat_the_sampler_records_nothing(tmp_path):
    sampler = CpuSampler(interval=0.05, stat=tmp_path / "none").start()
    time.sleep(0.2)
    assert sampler.stop()["busy_mean"] is None and sampler.samples == []


def test_on_this_machine_the_share_is_a_fraction():
    sampler = CpuSampler(interval=0.1).start()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.5:
        pass
    sampler.stop()
    assert sampler.samples and all(0 <= b <= 1 for _, b in sampler.samples)
