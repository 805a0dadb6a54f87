"""GL plumbing every part of the renderer uses: context and targets, the state cache, programs
and shader loading, meshes on the GPU, read-backs, the GPU timer."""
