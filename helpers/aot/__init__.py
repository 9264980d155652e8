"""Part 2, AOTAutograd (chapters 12-16): the ATen graphs, what they save, and how they are traced.

=======  =================  ===================================================================
chapter  module             what it opens
=======  =================  ===================================================================
1, 14    operators          operators an eager call dispatches; ATen / Core ATen / prims counted
2        graphs             the ATen forward and backward graphs a compiler receives (first look)
12       forward_backward   the joint graph, its partition, saved tensors, the compiled autograd node
13       functionalization  in-place ops and views made pure; input mutations and their epilogue
14       decompositions     decomposition tables: what ATen ops become, what Inductor keeps
15       partitioner        the min-cut partition, recomputation and the activation memory budget
16       fake               FakeTensor and the meta device: tracing without data
=======  =================  ===================================================================
"""
