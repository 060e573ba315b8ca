"""Statistics on records (decision importance, and the space restrictions it proposes): below
both the engine and the views, which call them. Nothing here builds or runs a kernel."""
