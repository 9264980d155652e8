"""Unit tests of helpers/runtime/triage_checks.py: the triage's readings of torch's messages (chapter 30).

The end-to-end checks (every call watched, the limit, purity, autograd under CUDA graphs, ISA probes) run
through the triage on planted models in tests/runtime/test_triage.py.
"""
from helpers.runtime.triage_checks import (autograd_under_cudagraphs, book_url, changing_state, chapter_url,
                                           limit_frames, shape_cause)

BRANCH = ("2 <= x.size()[0] <= 16  # if x.shape[0] > 16:  # mp/s.py:4 in f (user code shown is first use of this "
          "value--the guard itself is not due user code but due to 0/1 specialization in the framework; to avoid "
          "specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim)) and if x.shape[0] > 16:  # "
          "mp/s.py:4 in f (_dynamo/variables/tensor.py:2606 in evaluate_expr)")


def test_a_shape_guard_is_read_for_its_cause():
    # the guard torch 2.13 writes for `if x.shape[0] > 16:` after automatic dynamic (path suffix, as torch cuts it)
    assert shape_cause(BRANCH, "/tmp/s.py") == ("branch", "s.py:4 in f: if x.shape[0] > 16:")
    assert shape_cause("tensor 'x' size mismatch at index 0. expected 4, actual 8") == ("size mismatch", "")
    assert shape_cause("tensor 'x' size mismatch at index 0. expected 4, actual 1")[0] == "0/1 size"
    zero_one = ("2 <= x.size()[0]  # return torch.sin(x)  # s.py:5 in f (user code shown is first use of this "
                "value--the guard itself is not due user code but due to 0/1 specialization in the framework)")
    assert shape_cause(zero_one)[0] == "0/1 size"
    assert shape_cause("G['step'] == 3") == ("", "")


def test_a_counter_guard_names_the_state_and_a_limit_warning_names_the_frame():
    assert changing_state(["G['step'] == 0", "G['step'] == 1"]) == "step"
    assert changing_state(["self.calls == 7"]) == "self.calls"
    assert changing_state(["name == 'relu'"]) is None and changing_state([]) is None
    warning = ("torch._dynamo hit config.recompile_limit (8)\n   function: 'forward' (/a/b/t1.py:13)\n"
               "   last reason: 0/7: G['step'] == 7")
    assert limit_frames([warning]) == [{"limit": "recompile_limit", "value": 8, "function": "forward",
                                        "file": "/a/b/t1.py", "line": 13}]


def test_autograd_under_cuda_graphs_needs_reduce_overhead_inductor_and_outputs_that_require_grad():
    g = {"grad_enabled": True, "outputs_requiring_grad": 1}
    assert autograd_under_cudagraphs(g, "reduce-overhead", "inductor")
    assert not autograd_under_cudagraphs(g, None, "inductor")
    assert not autograd_under_cudagraphs(g, "reduce-overhead", "eager")
    assert not autograd_under_cudagraphs({"grad_enabled": False, "outputs_requiring_grad": 0}, "reduce-overhead",
                                         "inductor")


def test_chapter_links_point_at_the_published_book():
    # _config.yml has no html.baseurl: the GitHub Pages address of its repository
    assert book_url() == "https://torch-compile-opened-up.github.io/course/"
    assert chapter_url("ch26_recompiles") == ("https://torch-compile-opened-up.github.io/course/chapters/"
                                              "ch26_recompiles.html")


def test_launches_are_counted_inside_graph_partitions():
    # the shape of a reduce-overhead wrapper on a GPU (torch 2.11, H200): call() only calls partition_0
    from helpers.runtime.triage_checks import launches_and_library_calls

    source = ("def partition_0(args):\n    buf0 = empty()\n    triton_per_fused_norm_0.run(buf0, stream=s)\n"
              "    extern_kernels.mm(buf0, w, out=buf1)\n    triton_poi_fused_add_1.run(buf1)\n    return (buf1,)\n\n"
              "class Runner:\n    def call(self, args):\n        (out,) = self.partitions[0](args)\n"
              "        return out\n")
    assert launches_and_library_calls(source, ["triton_per_fused_norm_0", "triton_poi_fused_add_1"]) == (
        2, ["extern_kernels.mm"])


def test_cudagraph_call_counting_wraps_and_restores_the_tree_manager():
    # on a CPU nothing records; the wrappers must count through and leave the class as it was
    from helpers.core.private import private
    from helpers.runtime.triage_checks import cudagraph_calls, kept_output_loop

    cls = private("torch._inductor.cudagraph_trees.CUDAGraphTreeManager")
    before = (cls.record_function, cls.execute_node, cls.run_eager)
    with cudagraph_calls() as counts:
        assert cls.record_function is not before[0]
    assert (cls.record_function, cls.execute_node, cls.run_eager) == before
    assert counts == {"record": 0, "replay": 0, "warmup": 0}
    assert kept_output_loop(lambda: 1, calls=3) == {"record": 0, "replay": 0, "warmup": 0, "calls": 3}


def test_the_measured_kept_output_loop_is_reported():
    from helpers.runtime.triage import _cudagraphs_finding

    d = {"grad": {"grad_enabled": True, "params_requiring_grad": 6, "params": 6, "outputs_requiring_grad": 1,
                  "outputs": 1, "training": True}, "cudagraph_skips": {"count": 0, "reasons": []},
         "kept_output_loop": {"record": 5, "replay": 0, "warmup": 0, "calls": 5}}  # the H200's pattern (2.11)
    f = _cudagraphs_finding(d, {"mode": "reduce-overhead", "backend": "inductor"}, "cuda")
    assert f.status == "problem"
    assert "5 calls that keep the previous output (`out = model(x)`) recorded 5 new CUDA graph(s), replayed 0" in \
        f.lines[1].text and "every call paid for a recording" in f.lines[1].text
    # GPT-2 small on the H200 (zoo, torch 2.11): the manager was warming up, every kept-output call ran run_eager
    d["kept_output_loop"] = {"record": 0, "replay": 0, "warmup": 5, "calls": 5}
    f = _cudagraphs_finding(d, {"mode": "reduce-overhead", "backend": "inductor"}, "cuda")
    assert "recorded 0 new CUDA graph(s), replayed 0 and ran the warm-up path (run_eager) 5 time(s): every call " \
           "stayed in the warm-up, none replayed" in f.lines[1].text
    assert "try_end_curr_warmup() cannot end the warm-up" in f.lines[0].text


def test_book_url_from_baseurl_or_repository_and_the_local_page_when_none_is_known(tmp_path, monkeypatch):
    # html.baseurl wins over the repository's GitHub Pages address; with neither, a link is the local notebook
    import helpers.runtime.triage as triage_mod
    import helpers.runtime.triage_checks as checks

    (tmp_path / "_config.yml").write_text("html:\n  baseurl: https://book.example.org/course\nrepository:\n"
                                          "  url: https://github.com/Owner/repo\n")
    monkeypatch.setattr(checks, "REPO_ROOT", tmp_path)
    assert book_url() == "https://book.example.org/course/"
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/Owner/repo.git\n")
    assert book_url() == "https://owner.github.io/repo/"
    (tmp_path / "_config.yml").write_text("title: no address\n")
    assert book_url() is None and chapter_url("ch26_recompiles") is None
    link = triage_mod._chapter_link("ch26_recompiles", triage_mod.REPO_ROOT)
    assert link == "[ch26_recompiles](chapters/ch26_recompiles.ipynb)"
    assert triage_mod._chapter_link("ch26_recompiles", None) == "ch26_recompiles"


# the guard torch 2.13 wrote for /tmp/revtriage/models/shape_branch2.py: a layer reads x (first use, line 7)
# before the branch (line 8); "# {lower} and {upper}" (produce_guards_verbose, var_to_range_sloc)
LAYER_FIRST = ("2 <= x.size()[0] <= 16  # return F.linear(input, self.weight, self.bias)  # nn/modules/linear.py:134 "
               "in forward (user code shown is first use of this value--the guard itself is not due user code but "
               "due to 0/1 specialization in the framework; to avoid specialization try "
               "torch._dynamo.decorators.mark_unbacked(tensor, dim)) and if x.shape[0] > 16:  # "
               "mp/revtriage/models/shape_branch2.py:8 in forward (_dynamo/variables/tensor.py:2606 in evaluate_expr)")


def test_a_branch_is_named_by_the_bound_that_failed_not_by_the_first_use_of_the_size():
    from helpers.runtime.triage_checks import NO_LOCATION

    assert shape_cause(LAYER_FIRST, "/tmp/revtriage/models/shape_branch2.py") == (
        "branch", "shape_branch2.py:8 in forward: if x.shape[0] > 16:")
    # a lower bound set by a branch (`if x.shape[0] < 17:` taken the other way): the lower bound's location
    low = ("17 <= x.size()[0]  # if x.shape[0] < 17:  # mp/s.py:6 in f (_dynamo/variables/tensor.py:2606 in "
           "evaluate_expr)")
    assert shape_cause(low, "/tmp/s.py") == ("branch", "s.py:6 in f: if x.shape[0] < 17:")
    # an upper bound whose recorded location is only the first-use note: no line is given, not a wrong one
    only_first_use = ("2 <= x.size()[0] <= 16  # y = self.lin(x)  # mp/s.py:7 in f (user code shown is first use "
                      "of this value--the guard itself is not due user code) and (_dynamo/variables/tensor.py:2606 "
                      "in evaluate_expr)")
    assert shape_cause(only_first_use, "/tmp/s.py") == ("branch", NO_LOCATION)
