/**
 * A stand-in for Stripe.js v3, served by the local Stripe at GET /stripe-js/v3.
 *
 * It defines `window.Stripe(publishableKey, options)` with enough surface for
 * `@stripe/react-stripe-js` (`<Elements>` + `<CardElement>`, `useStripe`,
 * `useElements().getElement(CardElement)`) and for
 * `stripe.createToken(cardElement)` / `stripe.createPaymentMethod({ type: 'card', card })`.
 *
 * Instead of Stripe's iframe, the card element renders three plain, labelled
 * inputs in the mount node (so Playwright can fill them by label):
 *   "Card number" (name=cardnumber), "Expiration date" (name=exp-date, "MM / YY"),
 *   "CVC" (name=cvc).
 *
 * API base: the `data-api` attribute of the <script> tag if present, else the
 * URL the script was loaded from minus `/stripe-js/v3`.
 *
 * `Stripe.version` is 'endive' — the release train @stripe/stripe-js 10.x
 * expects — so `loadStripe()` does not warn when it finds this script already
 * loaded. (loadStripe only uses an existing `window.Stripe`; load this script
 * before calling it, or it injects the real one from js.stripe.com.)
 *
 * Plain ES2017 for any browser, sent as it is (server.ts reads this file; the
 * build copies it beside the bundled server).
 */
(function () {
  'use strict';
  if (typeof window === 'undefined') return;
  if (window.Stripe && window.Stripe.__localStandIn) return;

  var API_BASE = (function () {
    var s = document.currentScript ||
      document.querySelector('script[data-api]') ||
      document.querySelector('script[src*="/stripe-js/v3"]');
    if (s) {
      var explicit = s.getAttribute('data-api');
      if (explicit) return explicit.replace(/\/+$/, '');
      if (s.src) return s.src.replace(/\/stripe-js\/v3\/?(\?.*)?$/, '');
    }
    return window.location.origin;
  })();

  var UNSUPPORTED = 'not supported by the local stand-in';

  function unsupported() {
    return Promise.resolve({
      error: { type: 'invalid_request_error', code: 'unsupported', message: UNSUPPORTED }
    });
  }

  // ---- card helpers -------------------------------------------------------

  function digitsOf(s) { return String(s || '').replace(/\D/g, ''); }

  function luhn(d) {
    var sum = 0, dbl = false;
    for (var i = d.length - 1; i >= 0; i--) {
      var n = d.charCodeAt(i) - 48;
      if (dbl) { n *= 2; if (n > 9) n -= 9; }
      sum += n; dbl = !dbl;
    }
    return sum % 10 === 0;
  }

  function brandOf(d) {
    if (/^4/.test(d)) return 'visa';
    if (/^3[47]/.test(d)) return 'amex';
    var two = Number(d.slice(0, 2)), four = Number(d.slice(0, 4));
    if ((d.length >= 2 && two >= 51 && two <= 55) || (d.length >= 4 && four >= 2221 && four <= 2720)) return 'mastercard';
    return 'unknown';
  }

  function numberLength(brand) { return brand === 'amex' ? 15 : brand === 'unknown' ? 19 : 16; }

  function formatNumber(d, brand) {
    var groups = brand === 'amex' ? [4, 6, 5] : [4, 4, 4, 4, 3];
    var out = [], i = 0;
    for (var g = 0; g < groups.length && i < d.length; g++) {
      out.push(d.slice(i, i + groups[g]));
      i += groups[g];
    }
    return out.join(' ');
  }

  /** "1 / 2030", "12/2030", "1230" → digits MMYY (a leading 2-9 means a one-digit month). */
  function normalizeExpiry(d) {
    if (d.length > 0 && d[0] > '1') d = '0' + d;
    if (d.length >= 6 && d.slice(2, 4) === '20') d = d.slice(0, 2) + d.slice(4, 6);
    return d.slice(0, 4);
  }

  function formatExpiry(d) {
    if (d.length < 2) return d;
    return d.slice(0, 2) + ' / ' + d.slice(2);
  }

  function err(code, message) { return { type: 'validation_error', code: code, message: message }; }

  function checkNumber(d, final) {
    var brand = brandOf(d);
    var full = brand === 'unknown' ? d.length >= 16 : d.length >= numberLength(brand);
    if (full && !luhn(d)) return { complete: false, error: err('invalid_number', 'Your card number is invalid.') };
    if (full) return { complete: true, error: null };
    return { complete: false, error: final ? err('incomplete_number', 'Your card number is incomplete.') : null };
  }

  function checkExpiry(d, final) {
    if (d.length >= 2) {
      var month = Number(d.slice(0, 2));
      if (month < 1 || month > 12) return { complete: false, error: err('invalid_expiry_month', "Your card's expiration month is invalid.") };
    }
    if (d.length === 4) {
      var now = new Date();
      var year = 2000 + Number(d.slice(2, 4));
      var m = Number(d.slice(0, 2));
      if (year < now.getFullYear()) return { complete: false, error: err('invalid_expiry_year_past', "Your card's expiration year is in the past.") };
      if (year === now.getFullYear() && m < now.getMonth() + 1) return { complete: false, error: err('invalid_expiry_month_past', "Your card's expiration date is in the past.") };
      if (year > now.getFullYear() + 50) return { complete: false, error: err('invalid_expiry_year', "Your card's expiration year is invalid.") };
      return { complete: true, error: null };
    }
    return { complete: false, error: final ? err('incomplete_expiry', "Your card's expiration date is incomplete.") : null };
  }

  function checkCvc(d, brand, final) {
    var ok = brand === 'amex' ? d.length === 4 : brand === 'unknown' ? d.length >= 3 : d.length === 3;
    if (ok) return { complete: true, error: null };
    return { complete: false, error: final ? err('incomplete_cvc', "Your card's security code is incomplete.") : null };
  }

  // ---- HTTP -----------------------------------------------------------------

  function encodeForm(value, prefix, out) {
    if (value === undefined) return out;
    if (value === null || typeof value !== 'object') {
      out.push(encodeURIComponent(prefix) + '=' + encodeURIComponent(value === null ? '' : String(value)));
    } else if (Array.isArray(value)) {
      value.forEach(function (v, i) { encodeForm(v, prefix + '[' + i + ']', out); });
    } else {
      Object.keys(value).forEach(function (k) { encodeForm(value[k], prefix ? prefix + '[' + k + ']' : k, out); });
    }
    return out;
  }

  /** POSTs form params; resolves { body } or { error } and never rejects. */
  function post(key, path, params) {
    return fetch(API_BASE + path, {
      method: 'POST',
      headers: {
        'Authorization': 'Bearer ' + key,
        'Content-Type': 'application/x-www-form-urlencoded'
      },
      body: encodeForm(params, '', []).join('&')
    }).then(function (res) {
      return res.json().then(function (json) {
        if (!res.ok || (json && json.error)) {
          var e = (json && json.error) || {};
          var out = { type: e.type || 'api_error', message: e.message || ('HTTP ' + res.status) };
          ['code', 'decline_code', 'param', 'doc_url', 'charge', 'payment_intent', 'payment_method'].forEach(function (k) {
            if (e[k] !== undefined) out[k] = e[k];
          });
          return { error: out };
        }
        return { body: json };
      });
    }).catch(function (e) {
      return { error: { type: 'api_connection_error', message: 'Could not reach the local Stripe at ' + API_BASE + ': ' + (e && e.message) } };
    });
  }

  // ---- card element -----------------------------------------------------------

  var INPUT_CSS = 'font:inherit;color:inherit;background:transparent;border:none;padding:0;margin:0;' +
    'min-width:0;width:100%;box-sizing:border-box;letter-spacing:inherit;';

  function CardElement(group, options) {
    this._group = group;
    this._options = options || {};
    this._handlers = {};
    this._values = { number: '', exp: '', cvc: '' };
    this._touched = { number: false, exp: false, cvc: false };
    this._node = null;
    this._wrapper = null;
    this._inputs = null;
    this._focused = false;
    this._ready = false;
    this._destroyed = false;
  }

  CardElement.prototype._emit = function (event, payload) {
    var list = (this._handlers[event] || []).slice();
    for (var i = 0; i < list.length; i++) {
      try { list[i](payload); } catch (e) { setTimeout(function () { throw e; }); }
    }
  };

  CardElement.prototype.on = function (event, handler) {
    (this._handlers[event] = this._handlers[event] || []).push(handler);
    // Listeners added after 'ready' already fired still hear about it (React attaches late).
    if (event === 'ready' && this._ready) setTimeout(function () { handler({ elementType: 'card' }); }, 0);
    return this;
  };
  CardElement.prototype.addEventListener = CardElement.prototype.on;

  CardElement.prototype.once = function (event, handler) {
    var self = this;
    var wrapped = function (e) { self.off(event, wrapped); handler(e); };
    return this.on(event, wrapped);
  };

  CardElement.prototype.off = function (event, handler) {
    if (!event) { this._handlers = {}; return this; }
    if (!handler) { delete this._handlers[event]; return this; }
    this._handlers[event] = (this._handlers[event] || []).filter(function (h) { return h !== handler; });
    return this;
  };
  CardElement.prototype.removeEventListener = CardElement.prototype.off;

  CardElement.prototype._validate = function (forceFinal) {
    var v = this._values, t = this._touched;
    var brand = brandOf(v.number);
    var n = checkNumber(v.number, forceFinal || t.number);
    var e = checkExpiry(v.exp, forceFinal || t.exp);
    var c = checkCvc(v.cvc, brand, forceFinal || t.cvc);
    return {
      brand: brand,
      number: n, exp: e, cvc: c,
      complete: n.complete && e.complete && c.complete,
      empty: !v.number && !v.exp && !v.cvc,
      error: n.error || e.error || c.error || undefined
    };
  };

  CardElement.prototype._changeEvent = function () {
    var r = this._validate(false);
    return {
      elementType: 'card',
      empty: r.empty,
      complete: r.complete,
      error: r.error,
      brand: r.brand,
      value: { postalCode: '' }
    };
  };

  CardElement.prototype._refresh = function () {
    if (!this._inputs) return;
    var r = this._validate(false);
    var inputs = this._inputs;
    inputs.number.setAttribute('aria-invalid', r.number.error ? 'true' : 'false');
    inputs.exp.setAttribute('aria-invalid', r.exp.error ? 'true' : 'false');
    inputs.cvc.setAttribute('aria-invalid', r.cvc.error ? 'true' : 'false');
    var invalidColor = this._style('invalid', 'color');
    [['number', r.number], ['exp', r.exp], ['cvc', r.cvc]].forEach(function (pair) {
      inputs[pair[0]].style.color = pair[1].error && invalidColor ? invalidColor : '';
    });
    this._setClass('invalid', !!r.error);
    this._setClass('complete', r.complete);
    this._setClass('empty', r.empty);
    this._setClass('focus', this._focused);
  };

  CardElement.prototype._classNames = function () {
    var c = this._options.classes || {};
    return {
      base: c.base || 'StripeElement',
      complete: c.complete || 'StripeElement--complete',
      empty: c.empty || 'StripeElement--empty',
      focus: c.focus || 'StripeElement--focus',
      invalid: c.invalid || 'StripeElement--invalid'
    };
  };

  CardElement.prototype._setClass = function (which, on) {
    if (!this._node) return;
    var name = this._classNames()[which];
    if (on) this._node.classList.add(name); else this._node.classList.remove(name);
  };

  CardElement.prototype._style = function (variant, prop) {
    var s = this._options.style && this._options.style[variant];
    return s && s[prop];
  };

  CardElement.prototype._applyOptions = function () {
    if (!this._inputs) return;
    var base = (this._options.style && this._options.style.base) || {};
    var self = this;
    ['number', 'exp', 'cvc'].forEach(function (k) {
      var input = self._inputs[k];
      ['color', 'fontSize', 'fontFamily', 'fontWeight', 'lineHeight', 'letterSpacing'].forEach(function (p) {
        if (base[p]) input.style[p] = base[p];
      });
      input.disabled = !!self._options.disabled;
    });
    this._refresh();
  };

  CardElement.prototype.mount = function (target) {
    if (this._destroyed) throw new Error('IntegrationError: This Element has already been destroyed.');
    var node = typeof target === 'string' ? document.querySelector(target) : target;
    if (!node || !node.appendChild) {
      throw new Error('IntegrationError: The selector you specified (' + target + ') applies to no DOM elements that are currently on the page.');
    }
    if (this._node) this.unmount();
    var self = this;
    var wrapper = document.createElement('div');
    wrapper.className = '__PrivateStripeElement';
    wrapper.setAttribute('data-local-stripe', 'card');
    wrapper.style.cssText = 'display:flex;flex-wrap:wrap;align-items:center;gap:0.5em 0.75em;width:100%;';

    function field(name, label, placeholder, autocomplete, flex) {
      var input = document.createElement('input');
      input.type = 'text';
      input.name = name;
      input.setAttribute('aria-label', label);
      input.placeholder = placeholder;
      input.autocomplete = autocomplete;
      input.setAttribute('inputmode', 'numeric');
      input.setAttribute('autocorrect', 'off');
      input.setAttribute('spellcheck', 'false');
      input.style.cssText = INPUT_CSS + 'flex:' + flex + ';';
      wrapper.appendChild(input);
      return input;
    }
    var inputs = {
      number: field('cardnumber', 'Card number', '1234 1234 1234 1234', 'cc-number', '1 1 11em'),
      exp: field('exp-date', 'Expiration date', 'MM / YY', 'cc-exp', '1 1 4.5em'),
      cvc: field('cvc', 'CVC', 'CVC', 'cc-csc', '1 1 3.5em')
    };
    inputs.exp.style.maxWidth = '7em';
    inputs.cvc.style.maxWidth = '5em';
    inputs.number.value = formatNumber(this._values.number, brandOf(this._values.number));
    inputs.exp.value = formatExpiry(this._values.exp);
    inputs.cvc.value = this._values.cvc;

    function onInput(key, e) {
      var input = inputs[key];
      var before = self._values[key];
      var caretDigits = digitsOf(input.value.slice(0, input.selectionStart == null ? input.value.length : input.selectionStart)).length;
      var d = digitsOf(input.value);
      var formatted;
      if (key === 'number') {
        d = d.slice(0, numberLength(brandOf(d)));
        formatted = formatNumber(d, brandOf(d));
      } else if (key === 'exp') {
        // Backspace over the " / " separator removes the month's last digit instead.
        if (e && e.inputType === 'deleteContentBackward' && d === before && d.length === 2) d = d.slice(0, 1);
        d = normalizeExpiry(d);
        formatted = d.length === 2 && e && e.inputType === 'deleteContentBackward' ? d : formatExpiry(d);
      } else {
        d = d.slice(0, brandOf(self._values.number) === 'amex' || brandOf(self._values.number) === 'unknown' ? 4 : 3);
        formatted = d;
      }
      self._values[key] = d;
      if (input.value !== formatted) {
        input.value = formatted;
        // Keep the caret after the same number of digits.
        var pos = formatted.length, seen = 0;
        if (caretDigits < d.length) {
          for (var i = 0; i < formatted.length; i++) {
            if (/\d/.test(formatted[i])) seen++;
            if (seen === caretDigits) { pos = i + 1; break; }
          }
          if (caretDigits === 0) pos = 0;
        }
        try { input.setSelectionRange(pos, pos); } catch (ignored) { /* not focused */ }
      }
      self._refresh();
      self._emit('change', self._changeEvent());
      // Move on once a part is complete, like Stripe's card element.
      var r = self._validate(false);
      if (document.activeElement === input && before !== d) {
        if (key === 'number' && r.number.complete) inputs.exp.focus();
        else if (key === 'exp' && r.exp.complete) inputs.cvc.focus();
      }
    }

    ['number', 'exp', 'cvc'].forEach(function (key) {
      inputs[key].addEventListener('input', function (e) { onInput(key, e); });
      inputs[key].addEventListener('blur', function () {
        if (self._values[key]) self._touched[key] = true;
        var hadError = !!self._validate(false).error;
        self._refresh();
        if (hadError) self._emit('change', self._changeEvent());
      });
    });
    wrapper.addEventListener('focusin', function () {
      if (self._focused) return;
      self._focused = true;
      self._refresh();
      self._emit('focus', { elementType: 'card' });
    });
    wrapper.addEventListener('focusout', function (e) {
      if (e.relatedTarget && wrapper.contains(e.relatedTarget)) return;
      self._focused = false;
      self._refresh();
      self._emit('blur', { elementType: 'card' });
    });
    wrapper.addEventListener('keydown', function (e) {
      if (e.key === 'Escape') self._emit('escape', { elementType: 'card' });
    });
    wrapper.addEventListener('click', function () { self._emit('click', { elementType: 'card' }); });

    node.appendChild(wrapper);
    this._node = node;
    this._wrapper = wrapper;
    this._inputs = inputs;
    node.classList.add(this._classNames().base);
    this._applyOptions();
    setTimeout(function () {
      if (self._inputs !== inputs) return;
      self._ready = true;
      self._emit('ready', { elementType: 'card' });
    }, 0);
    return this;
  };

  CardElement.prototype.unmount = function () {
    if (this._wrapper && this._wrapper.parentNode) this._wrapper.parentNode.removeChild(this._wrapper);
    if (this._node) {
      var names = this._classNames();
      var node = this._node;
      Object.keys(names).forEach(function (k) { node.classList.remove(names[k]); });
    }
    this._node = null;
    this._wrapper = null;
    this._inputs = null;
    this._focused = false;
    this._ready = false;
    return this;
  };

  CardElement.prototype.destroy = function () {
    this.unmount();
    this._destroyed = true;
    this._handlers = {};
    var list = this._group._elements;
    var i = list.indexOf(this);
    if (i >= 0) list.splice(i, 1);
    return this;
  };

  CardElement.prototype.update = function (options) {
    options = options || {};
    var merged = {};
    var self = this;
    Object.keys(this._options).forEach(function (k) { merged[k] = self._options[k]; });
    Object.keys(options).forEach(function (k) { merged[k] = options[k]; });
    this._options = merged;
    this._applyOptions();
    return this;
  };

  CardElement.prototype.focus = function () { if (this._inputs) this._inputs.number.focus(); return this; };
  CardElement.prototype.blur = function () {
    if (this._wrapper && this._wrapper.contains(document.activeElement)) document.activeElement.blur();
    return this;
  };
  CardElement.prototype.clear = function () {
    this._values = { number: '', exp: '', cvc: '' };
    this._touched = { number: false, exp: false, cvc: false };
    if (this._inputs) { this._inputs.number.value = ''; this._inputs.exp.value = ''; this._inputs.cvc.value = ''; }
    this._refresh();
    this._emit('change', this._changeEvent());
    return this;
  };

  /** The raw card params for /v1/tokens, or a validation error. */
  CardElement.prototype._cardParams = function () {
    if (this._destroyed) return { error: err('integration_error', 'This Element has been destroyed.') };
    var r = this._validate(true);
    if (r.error) {
      this._touched = { number: true, exp: true, cvc: true };
      this._refresh();
      return { error: r.error };
    }
    var v = this._values;
    return {
      card: {
        number: v.number,
        exp_month: String(Number(v.exp.slice(0, 2))),
        exp_year: String(2000 + Number(v.exp.slice(2, 4))),
        cvc: v.cvc
      }
    };
  };

  // ---- elements group ---------------------------------------------------------

  function Elements(stripe, options) {
    this._stripe = stripe;
    this._options = options || {};
    this._elements = [];
  }

  Elements.prototype.create = function (type, options) {
    if (type !== 'card') {
      throw new Error('IntegrationError: the local Stripe.js stand-in only supports the "card" Element (got "' + type + '").');
    }
    if (this.getElement(type)) throw new Error('IntegrationError: Can only create one Element of type card.');
    var el = new CardElement(this, options);
    this._elements.push(el);
    return el;
  };

  /** Accepts 'card' or the React component (which carries __elementType). */
  Elements.prototype.getElement = function (typeOrComponent) {
    var type = typeof typeOrComponent === 'string' ? typeOrComponent : typeOrComponent && typeOrComponent.__elementType;
    return type === 'card' && this._elements.length > 0 ? this._elements[0] : null;
  };

  Elements.prototype.update = function (options) {
    var self = this;
    Object.keys(options || {}).forEach(function (k) { self._options[k] = options[k]; });
  };
  Elements.prototype.fetchUpdates = function () { return Promise.resolve({}); };
  Elements.prototype.submit = unsupported;

  // ---- Stripe -----------------------------------------------------------------

  function Stripe(publishableKey, options) {
    if (typeof publishableKey !== 'string' || publishableKey === '') {
      throw new Error('IntegrationError: Please call Stripe() with your publishable key. You used an empty string.');
    }
    if (/^(sk|rk)_/.test(publishableKey)) {
      throw new Error('IntegrationError: You should not use your secret key with Stripe.js. Please pass a publishable key instead.');
    }
    var key = publishableKey;
    var wrappers = [];

    function createToken(element, data) {
      if (!(element instanceof CardElement)) return unsupported();
      var params = element._cardParams();
      if (params.error) return Promise.resolve({ error: params.error });
      data = data || {};
      ['name', 'address_line1', 'address_line2', 'address_city', 'address_state', 'address_zip', 'address_country', 'currency']
        .forEach(function (k) { if (data[k]) params.card[k] = data[k]; });
      return post(key, '/v1/tokens', params).then(function (r) {
        return r.error ? { error: r.error } : { token: r.body };
      });
    }

    function createPaymentMethod(arg, legacyElement, legacyData) {
      // Also the old signature: createPaymentMethod('card', cardElement, { billing_details })
      var opts = typeof arg === 'string'
        ? { type: arg, card: legacyElement, billing_details: legacyData && legacyData.billing_details }
        : (arg || {});
      if (opts.type !== 'card' || opts.elements) return unsupported();
      var tokenStep;
      if (opts.card instanceof CardElement) {
        tokenStep = createToken(opts.card);
      } else if (opts.card && typeof opts.card.token === 'string') {
        tokenStep = Promise.resolve({ token: { id: opts.card.token } });
      } else {
        return Promise.resolve({ error: err('integration_error', 'createPaymentMethod needs card: a card Element or { token }.') });
      }
      return tokenStep.then(function (r) {
        if (r.error) return { error: r.error };
        var params = { type: 'card', card: { token: r.token.id } };
        if (opts.billing_details) params.billing_details = opts.billing_details;
        if (opts.metadata) params.metadata = opts.metadata;
        return post(key, '/v1/payment_methods', params).then(function (res) {
          return res.error ? { error: res.error } : { paymentMethod: res.body };
        });
      });
    }

    var stripe = {
      elements: function (opts) { return new Elements(stripe, opts); },
      createToken: createToken,
      createPaymentMethod: createPaymentMethod,
      paymentRequest: function () {
        // No wallets locally: canMakePayment() resolves null like a browser without any.
        return {
          canMakePayment: function () { return Promise.resolve(null); },
          show: function () {}, abort: function () {}, update: function () {},
          on: function () { return this; }, off: function () { return this; },
          isShowing: function () { return false; }
        };
      },
      _registerWrapper: function (w) { wrappers.push(w); },
      registerAppInfo: function () {},
      _localStandIn: { apiBase: API_BASE, publishableKey: key, options: options || {}, wrappers: wrappers }
    };
    [
      'confirmCardPayment', 'confirmPayment', 'confirmCardSetup', 'confirmSetup', 'handleCardAction',
      'handleNextAction', 'retrievePaymentIntent', 'retrieveSetupIntent', 'createSource', 'retrieveSource',
      'createConfirmationToken', 'verifyMicrodepositsForPayment', 'verifyMicrodepositsForSetup',
      'collectBankAccountForPayment', 'collectBankAccountForSetup', 'collectBankAccountToken',
      'collectFinancialConnectionsAccounts', 'createRadarSession', 'confirmAcssDebitPayment',
      'confirmUsBankAccountPayment', 'redirectToCheckout'
    ].forEach(function (name) { stripe[name] = unsupported; });
    return stripe;
  }

  Stripe.version = 'endive';
  Stripe.__localStandIn = true;
  window.Stripe = Stripe;
})();
