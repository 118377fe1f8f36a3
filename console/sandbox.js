// The sandbox reader: a sandboxed frame of the console (served with the CSP `sandbox
// allow-scripts`, so its origin is opaque however it is opened) that reads an agent's
// `/files/read` the way Mesos' web UI does, as JSONP (`?jsonp=`): the agent's answer runs as a
// script HERE, where there is nothing to take (no credentials, no storage, no access to the
// console's page), never in the console itself. It hands the data to the console by postMessage,
// which shows it as text. A classic script, not a module: an opaque origin loads it without CORS.
(function () {
  'use strict';
  var seq = 0;
  window.addEventListener('message', function (e) {
    var m = e.data;
    if (e.source !== window.parent || m === null || typeof m !== 'object' || typeof m.url !== 'string' || typeof m.origin !== 'string') return;
    var url;
    try {
      url = new URL(m.url);
    } catch (err) {
      return;
    }
    // Only an agent's files API: nothing else is ever loaded as a script here.
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || url.pathname !== '/files/read') return;
    var name = '__drydockRead' + ++seq;
    var done = false;
    var el = document.createElement('script');
    var finish = function (msg) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      delete window[name];
      el.remove();
      msg.id = m.id;
      window.parent.postMessage(msg, m.origin);
    };
    var timer = setTimeout(function () { finish({ error: 'no answer' }); }, 8000);
    window[name] = function (data) {
      finish(data !== null && typeof data === 'object' ? { data: typeof data.data === 'string' ? data.data : '', offset: Number(data.offset) } : { error: 'not a files answer' });
    };
    url.searchParams.set('jsonp', name);
    el.src = url.href;
    // A refusal (401, 403), a 404 or an unreachable agent: the script does not load.
    el.onerror = function () { finish({ error: 'refused or unreachable' }); };
    document.head.appendChild(el);
  });
  window.parent.postMessage({ ready: true }, '*');
})();
