"""The $EDITOR edit/re-open loop behind `gazctl journals edit` and `gazctl shards edit`.

`edit_specs` opens the user's editor ($GAZ_EDITOR, $EDITOR, else vi) on specs
rendered as YAML and hands the saved text to an `apply` callback; when the text
is invalid or the cluster refuses it, the editor opens again on the user's own
text with the error above it (`loop` says how). The loop knows nothing of
journals or shards: the command modules in `gazctl.commands`
(`journals_edit`, `shards_apply`) render the specs, parse and apply the edited
text through the library, and call this package; it relies on
`gazctl.commands.apply_txns` only to tell a partly applied edit, which must not
re-open, and on `gazctl.render` for its messages.
"""

from gazctl.editor.loop import edit_specs

__all__ = ["edit_specs"]
