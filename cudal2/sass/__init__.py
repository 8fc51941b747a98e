"""The assembly game's CPU side: reorder the SASS of a finished sm_90 cubin without an assembler.

- `tools`: where nvdisasm and cuobjdump are (PATH, then the nvidia-cuda-* pip packages);
- `cubin`: the ELF: kernel text, `.nv.info` offsets that pin instructions, byte-exact write-back;
- `disasm`: nvdisasm parsed per instruction (word, control fields, registers read and written,
  basic blocks);
- `isa`: what each opcode is, as far as legality needs (pinned, memory spaces, variable latency);
- `legality`: accept or reject a new order of one basic block, with the reason;
- `patch`: write that order into the cubin (whole 16-byte words, reuse flags cleared);
- `game`: the assembly game on one kernel (state, per-instruction features, the checker's action
  mask, a reward from a pluggable `measure`);
- `agents`: greedy and simulated annealing (no PPO yet), with their checker and GPU costs;
- `verify`: the GPU side, in a worker process: bit-for-bit comparison with the original, and the
  paired timing that is the game's `measure`;
- `run`: `cudal2 sass`, playing library entries and publishing a verified winner.

Only `verify` (and `run` through it) touches a GPU; a reordered kernel is only trusted after a
bit-exact comparison with the original on the device.
"""
