"""The memory graph: relationship types (registry), writing associations (links), walks (walk),
recall's expansion along edges and entities (expansion), and what is current at an instant
(current_state). Edges live in the edges index (storage.edges); supersession state on memories."""
