// The Hearth nodes' shared editor code, used by every nodes/hearth-*.html: Node-RED
// serves this package's resources/ folder at resources/@hearth-bridge/hearth/,
// and each node's file loads this script before it registers its type.
// Each node's file has what Node-RED and the flow library read from it: its
// form as a static template (<script type="text/html" data-template-name>)
// and its definition inline in RED.nodes.registerType (category, colour, icon,
// inputs, outputs, defaults, credentials). This file gives the behaviour the
// forms share, found by data attributes on the template's elements:
//   data-hearth-pick="entity|area|kind|tool|principal|role"  completes from the bridge's catalog
//   data-hearth-daemon (on a form row)                         hidden on a daemon bridge, with the .hearth-daemon-note
//   data-hearth-checks (a hidden input)                        filled from the .hearth-check-<field> boxes
//   data-hearth-editor="json|text" (a .node-text-editor div)   a code editor for the hidden input it names
//   data-hearth-typed="<type field>" data-hearth-types="a,b"   a typed input (the first type is the default)
(() => {
  // Every node file loads this script; the first one defines it.
  if (window.hearthEditor) return;

  const cache = {};
  /** The deployed bridge's catalog (the editor-only admin endpoint hearth/bridges/<id>/catalog, needs hearth.read). */
  function catalog(bridgeId, done) {
    if (!bridgeId || bridgeId === '_ADD_') return done(null, 'choose a bridge first');
    if (cache[bridgeId]) return done(cache[bridgeId]);
    $.getJSON(`hearth/bridges/${encodeURIComponent(bridgeId)}/catalog`)
      .done((c) => {
        cache[bridgeId] = c;
        done(c);
      })
      .fail((xhr) => done(null, xhr.responseJSON?.error || `catalog: ${xhr.status}`));
  }

  const plain = (list) => (list || []).map((value) => ({ value, hint: '' }));
  /** What a picker of one kind offers, from a catalog. */
  const WORDS = {
    entity: (c) =>
      c.entities.map((e) => ({
        value: e.id,
        hint: e.name + (e.area ? ` (${e.area})` : '') + (e.tool ? ` · ${e.tool}: ${(e.actions || []).join(', ')}` : ''),
      })),
    tool: (c) => c.tools.map((t) => ({ value: t.name, hint: (t.description || '').slice(0, 60) })),
    area: (c) => plain(c.areas),
    kind: (c) => plain(c.kinds),
    principal: (c) => plain(c.principals),
    role: (c) => plain(c.roles),
  };

  const bridgeOf = (node) => $('#node-input-bridge').val() || node.bridge;

  /** Fields that complete from the bridge: { field: 'entity' | 'area' | 'kind' | 'tool' | 'principal' | 'role' }. */
  function pickers(node, fields) {
    for (const [field, what] of Object.entries(fields)) {
      const input = $(`#node-input-${field}`);
      if (!input.length || !input.autoComplete) continue;
      input.autoComplete({
        minLength: 0,
        search(value, done) {
          catalog(bridgeOf(node), (c) => {
            // Globs: complete the last | alternative.
            const parts = value.split('|');
            const last = parts.pop().toLowerCase();
            const head = parts.length ? `${parts.join('|')}|` : '';
            const words = c ? WORDS[what](c) : [];
            done(
              words
                .filter((w) => w.value.toLowerCase().includes(last))
                .slice(0, 30)
                .map((w) => ({
                  value: head + w.value,
                  label: $('<div>')
                    .append($('<span>').text(w.value))
                    .append(w.hint ? $('<span style="opacity:.6; margin-left:.5em">').text(w.hint) : ''),
                })),
            );
          });
        },
      });
    }
    $('#node-input-bridge').on('change', () => {
      for (const k of Object.keys(cache)) delete cache[k];
    });
  }

  /** Fields a bridge connected to a daemon ignores (the daemon's token says who calls): hidden there, with a note. */
  function daemonHides(node, fields) {
    const update = () => {
      const bridge = RED.nodes.node(bridgeOf(node));
      const daemon = !bridge || (bridge.mode || 'daemon') === 'daemon';
      for (const field of fields) $(`#node-input-${field}`).closest('.form-row').toggle(!daemon);
      $('.hearth-daemon-note').toggle(daemon);
    };
    $('#node-input-bridge').on('change', update);
    update();
  }

  /** A validator: the text is a JSON object (`typeField`: only when that typed input says json). */
  function jsonObject(typeField, also = () => true) {
    return function (v) {
      const field = typeField && $(`#node-input-${typeField}`);
      const type = field?.length ? field.val() : typeField && this[typeField];
      if (type && type !== 'json') return true;
      try {
        const o = JSON.parse(v || '{}');
        return !!o && typeof o === 'object' && !Array.isArray(o) && also(o);
      } catch {
        return false;
      }
    };
  }

  /**
   * A validator for a broker field: one broker URL, or a clustered broker's nodes comma-separated, each
   * mqtt://, mqtts://, ws:// or wss:// with a host. Says which node is wrong (Node-RED shows the text).
   */
  function brokerUrls(v) {
    const parts = String(v ?? '').split(',').map((u) => u.trim());
    for (let i = 0; i < parts.length; i++) {
      const which = parts.length > 1 ? `node ${i + 1} of ${parts.length}` : 'the URL';
      if (!parts[i]) return `${which} is empty`;
      // scheme://[user[:password]@]host[:port][/path]; an IPv6 host in brackets.
      if (!/^(mqtts?|wss?|tcp|ssl):\/\/([^\s/?#@]+@)?(\[[0-9a-fA-F:.]+\]|[^\s/:?#@[\]]+)(:\d{1,5})?(\/\S*)?$/.test(parts[i])) {
        return `${which} (${parts[i].slice(0, 60)}) is not an mqtt://, mqtts://, ws:// or wss:// URL`;
      }
    }
    return true;
  }

  // ------------------------------------------------------------ a node's form

  /** The open form of this node: a config node's tray or a flow node's. */
  function formOf(node) {
    return node._def.category === 'config' ? $('#node-config-dialog-edit-form') : $('#dialog-form');
  }

  /** The field an element edits: its id without the node-input- (or node-config-input-) prefix. */
  const fieldOf = (el) => el.id.replace(/^node-(config-)?input-/, '');

  /** Wire the form's shared behaviour (call first in oneditprepare). */
  function prepare(node) {
    const form = formOf(node);
    form.find('[data-hearth-typed]').each(function () {
      const typeField = $(`#node-input-${$(this).attr('data-hearth-typed')}`);
      const types = $(this).attr('data-hearth-types').split(',');
      if (!typeField.val()) typeField.val(types[0]);
      $(this).typedInput({ default: types[0], typeField, types });
    });
    form.find('input[data-hearth-checks]').each(function () {
      const chosen = ($(this).val() || '').split(',').filter(Boolean);
      form.find(`.hearth-check-${fieldOf(this)}`).each(function () {
        $(this).prop('checked', chosen.includes($(this).val()));
      });
    });
    node._hearthEditors = [];
    form.find('[data-hearth-editor]').each(function () {
      const field = this.id.replace(/^node-input-/, '').replace(/-editor$/, '');
      node[`${field}Editor`] = RED.editor.createEditor({ id: this.id, mode: `ace/mode/${$(this).attr('data-hearth-editor')}`, value: $(`#node-input-${field}`).val() });
      node._hearthEditors.push(field);
    });
    const pick = {};
    form.find('[data-hearth-pick]').each(function () {
      pick[fieldOf(this)] = $(this).attr('data-hearth-pick');
    });
    if (Object.keys(pick).length) pickers(node, pick);
    const daemonFields = form.find('[data-hearth-daemon] [id^="node-input-"]').map((_, el) => fieldOf(el)).get();
    if (daemonFields.length) daemonHides(node, daemonFields);
  }

  function closeEditors(node) {
    for (const field of node._hearthEditors || []) {
      node[`${field}Editor`].destroy();
      delete node[`${field}Editor`];
    }
    node._hearthEditors = [];
  }

  /** Put the form's values where Node-RED saves them from (call first in oneditsave). */
  function save(node) {
    const form = formOf(node);
    form.find('input[data-hearth-checks]').each(function () {
      const chosen = [];
      form.find(`.hearth-check-${fieldOf(this)}:checked`).each(function () {
        chosen.push($(this).val());
      });
      $(this).val(chosen.join(','));
    });
    for (const field of node._hearthEditors || []) $(`#node-input-${field}`).val(node[`${field}Editor`].getValue());
    closeEditors(node);
    // Saved by this editor: the node's settings are version 1's (nodes/lib/versions.ts migrates older ones).
    node.version = 1;
  }

  /** The code editors fill what the tray leaves below the other rows. */
  function resize(node) {
    const form = formOf(node);
    let height = form.height();
    form.children('div:not(.node-text-editor-row)').each(function () {
      height -= $(this).outerHeight(true);
    });
    form.find('.node-text-editor-row .node-text-editor').css('height', `${Math.max(height - 20, 80)}px`);
    for (const field of node._hearthEditors || []) node[`${field}Editor`].resize();
  }

  /** Output labels from the node's message catalog (<type>.outputs.<key>). */
  function outputLabels(type, keys) {
    return function (i) {
      return this._(`${type}.outputs.${keys[i]}`);
    };
  }

  window.hearthEditor = { catalog, jsonObject, brokerUrls, prepare, save, cancel: closeEditors, resize, outputLabels };
})();
