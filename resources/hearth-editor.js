// The Hearth nodes' editor forms, shared by every nodes/hearth-*.html: Node-RED
// serves this package's resources/ folder at resources/@hearth-bridge/hearth/,
// and each node's file loads this script before it registers its type.
// A node describes its form as a list of rows; this file builds the template
// (labels and placeholders from the node's message catalog), wires the
// pickers (entities, areas, kinds, tools, principals, roles) to the bridge's
// catalog, typed inputs, code editors and checkbox sets, and hides the fields
// a daemon bridge ignores.
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

  const esc = (s) => $('<div>').text(String(s)).html();
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

  // ------------------------------------------------------------ the template

  const ROW_STYLE = {
    check: 'display: inline-block; width: auto; vertical-align: top;',
    pre: 'display: inline-block; width: 70%; max-height: 160px; overflow: auto; margin: 0; font-size: 11px;',
  };

  /** One row of a form, as HTML. `type` names the node (its catalog keys), `p` the id prefix. */
  function rowHtml(type, p, r) {
    const cls = `form-row${r.cls ? ` ${r.cls}` : ''}`;
    if (r.note) return `<div class="form-tips ${r.note.cls}" style="display: none" data-i18n="${type}.${r.note.key}"></div>`;
    if (r.heading) return `<h4 class="${r.cls || ''}" data-i18n="${type}.${r.heading}"></h4>`;
    const id = `${p}${r.f}`;
    const label = (forId) =>
      `<label${forId ? ` for="${forId}"` : ''}><i class="fa fa-${r.icon}"></i> <span data-i18n="${r.i18n || `${type}.label.${r.label || r.f}`}"></span></label>`;
    if (r.check)
      return `<div class="${cls}"><label>&nbsp;</label><input type="checkbox" id="${id}" style="${ROW_STYLE.check}"> <label for="${id}" style="width: 70%;" data-i18n="${type}.label.${r.f}"></label></div>`;
    if (r.checks) {
      const boxes = r.checks
        .map((v) => `<label style="width: auto;"><input type="checkbox" class="hearth-check-${r.f}" value="${esc(v)}" style="width: auto;"> ${esc(v.replace(/_/g, ' '))}</label>`)
        .join(' ');
      return `<div class="${cls}">${label()}<input type="hidden" id="${id}"><span style="display: inline-block; width: 70%;">${boxes}</span></div>`;
    }
    if (r.editor)
      return `<div class="form-row" style="margin-bottom: 0px;">${label(`${id}-editor`)}<input type="hidden" id="${id}"></div><div class="form-row node-text-editor-row"><div style="height: ${r.height}px; min-height: 80px;" class="node-text-editor" id="${id}-editor"></div></div>`;
    if (r.show) return `<div class="${cls}">${label()}<pre id="${r.show}" style="${ROW_STYLE.pre}"></pre></div>`;
    return `<div class="${cls}">${label(id)}${fieldHtml(type, p, r)}${r.also ? fieldHtml(type, p, r.also) : ''}${r.suffix || ''}</div>`;
  }

  /** The input (or select) of a row. */
  function fieldHtml(type, p, r) {
    const id = `${p}${r.f}`;
    const style = r.width ? ` style="width: ${r.width};"` : '';
    if (r.options) {
      const options = r.options.map((o) => {
        const [value, key] = Array.isArray(o) ? o : [o, o];
        return r.literal ? `<option value="${esc(value)}">${esc(key)}</option>` : `<option value="${esc(value)}" data-i18n="${type}.${r.f}.${key}"></option>`;
      });
      return `<select id="${id}"${style}>${options.join('')}</select>`;
    }
    const ph = r.ph ? ` data-i18n="[placeholder]${r.ph === 'name' ? 'node-red:common.label.name' : `${type}.placeholder.${r.ph}`}"` : '';
    const literal = r.placeholder ? ` placeholder="${esc(r.placeholder)}"` : '';
    const typed = r.typed ? `<input type="hidden" id="${p}${r.typed.field}">` : '';
    return `<input type="${r.cred === 'password' ? 'password' : 'text'}" id="${id}"${style}${ph}${literal}>${typed}`;
  }

  /** Put a template where the editor looks for it: script[data-template-name=type]. */
  function template(type, rows, prefix) {
    const html = rows.map((r) => rowHtml(type, prefix, r)).join('\n');
    $('<script type="text/html" data-hearth-form>').attr('data-template-name', type).text(html).appendTo('body');
  }

  // ------------------------------------------------------------ registering a node

  const NAME_ROW = { f: 'name', icon: 'tag', i18n: 'node-red:common.label.name', ph: 'name' };

  /** A row's setting in the node's defaults (or credentials): its value, validate, required and type. */
  function fieldDefault(r) {
    const d = { value: r.value ?? (r.check ? false : '') };
    for (const k of ['validate', 'required', 'type']) if (r[k] !== undefined) d[k] = r[k];
    return d;
  }

  /**
   * Register a Hearth node: its colour, icon and category, a name (and a bridge, unless `config` or `noBridge`),
   * its defaults and form from `form` rows, and output labels from `outputs` (catalog keys under <type>.outputs).
   * Rows: { f, icon, value, validate, placeholder | ph, pick, options, check, checks, editor, typed, cred,
   * daemon (hidden on a daemon bridge), cls, width, suffix, also }.
   */
  function register(type, def) {
    const { form = [], config = false, noBridge = false, prepare, save, outputs = 0, ...rest } = def;
    const p = config ? 'node-config-input-' : 'node-input-';
    const withBridge = !config && !noBridge;
    const fields = form.flatMap((r) => [r, ...(r.also ? [r.also] : [])]).filter((r) => r.f && !r.show);
    const defaults = {};
    const credentials = {};
    for (const r of fields) {
      if (r.cred) credentials[r.f] = { type: r.cred };
      else defaults[r.f] = fieldDefault(r);
      if (r.typed) defaults[r.typed.field] = { value: r.typed.default };
    }
    const rows = [NAME_ROW, ...(withBridge ? [{ f: 'bridge', icon: 'home' }] : []), ...form];
    const daemonFields = form.filter((r) => r.daemon).map((r) => r.f);
    if (daemonFields.length) {
      const at = rows.findIndex((r) => r.f === daemonFields[daemonFields.length - 1]);
      rows.splice(at + 1, 0, { note: { cls: 'hearth-daemon-note', key: 'daemonNote' } });
    }
    template(type, rows, p);
    const editors = form.filter((r) => r.editor);
    const pick = Object.fromEntries(form.filter((r) => r.pick).map((r) => [r.f, r.pick]));
    const checks = form.filter((r) => r.checks);
    const closeEditors = (node) => {
      for (const r of editors) {
        node[`${r.f}Editor`].destroy();
        delete node[`${r.f}Editor`];
      }
    };
    RED.nodes.registerType(type, {
      category: config ? 'config' : 'hearth',
      ...(config ? {} : { color: '#E9967A', icon: 'hearth.svg' }),
      defaults: {
        name: { value: '' },
        version: { value: 1 },
        ...(withBridge ? { bridge: { value: '', type: 'hearth-bridge', required: true } } : {}),
        ...defaults,
      },
      ...(Object.keys(credentials).length ? { credentials } : {}),
      ...(Array.isArray(outputs)
        ? {
            outputs: outputs.length,
            outputLabels(i) {
              return this._(`${type}.outputs.${outputs[i]}`);
            },
          }
        : { outputs }),
      ...rest,
      oneditprepare() {
        for (const r of form.filter((x) => x.typed)) {
          if (!this[r.typed.field]) $(`#${p}${r.typed.field}`).val(r.typed.default);
          $(`#${p}${r.f}`).typedInput({ default: r.typed.default, typeField: $(`#${p}${r.typed.field}`), types: r.typed.types });
        }
        for (const r of checks) {
          const chosen = (this[r.f] || '').split(',').filter(Boolean);
          $(`.hearth-check-${r.f}`).each(function () {
            $(this).prop('checked', chosen.includes($(this).val()));
          });
        }
        for (const r of editors) {
          this[`${r.f}Editor`] = RED.editor.createEditor({ id: `${p}${r.f}-editor`, mode: `ace/mode/${r.editor}`, value: $(`#${p}${r.f}`).val() });
        }
        if (Object.keys(pick).length) pickers(this, pick);
        if (daemonFields.length) daemonHides(this, daemonFields);
        prepare?.call(this);
      },
      oneditsave() {
        for (const r of checks) {
          const chosen = [];
          $(`.hearth-check-${r.f}:checked`).each(function () {
            chosen.push($(this).val());
          });
          $(`#${p}${r.f}`).val(chosen.join(','));
        }
        for (const r of editors) $(`#${p}${r.f}`).val(this[`${r.f}Editor`].getValue());
        closeEditors(this);
        this.version = 1;
        save?.call(this);
      },
      oneditcancel() {
        closeEditors(this);
      },
      ...(editors.length
        ? {
            oneditresize() {
              const form = $('#dialog-form');
              let height = form.height();
              form.children('div:not(.node-text-editor-row)').each(function () {
                height -= $(this).outerHeight(true);
              });
              $('.node-text-editor-row .node-text-editor').css('height', `${Math.max(height - 20, 80)}px`);
              for (const r of editors) this[`${r.f}Editor`].resize();
            },
          }
        : {}),
    });
  }

  window.hearthEditor = { catalog, pickers, daemonHides, jsonObject, brokerUrls, register };
})();
