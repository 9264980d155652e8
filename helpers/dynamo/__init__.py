"""Part 1, TorchDynamo (chapters 3-11), and the Dynamo views chapters 1-2 take a first look through.

=======  ===============  ======================================================================
chapter  module           what it opens
=======  ===============  ======================================================================
1-11     state            compile state: reset, recorded graphs, cache entries, explain
1-11     config           ``torch._dynamo.config`` read and changed for a block
3-11     logs             ``TORCH_LOGS`` artifacts captured in-process
3        bytecode         instruction listings (used again in 4, 5, 9, 10)
3        frames           the PEP 523 frame hook
4        translator       the instruction translator, its trace and handler table
5        variables        VariableTrackers, Sources, input kinds
6        guards           guard trees, cache entries, recompiles, guard cost
7        side_effects     replayed mutations after the graph call
8        output_graph     the OutputGraph: pruned inputs, compiled-graph globals
9        codegen          the rewritten bytecode and resume functions
10       graph_breaks     graph breaks counted, located, avoided
11       shapes           symbolic shapes, dynamic and unbacked dimensions
1-11     exercises        exercise checks that compile the reader's code
=======  ===============  ======================================================================
"""
