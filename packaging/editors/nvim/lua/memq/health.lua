-- :checkhealth memq — the socket the plugin uses, whether memqd answers there, and its version. Uses vim.health
-- (Neovim 0.10) or the older `health` module (0.7 to 0.9), whichever this Neovim has.

local M = {}

local function reporter()
  local ok, legacy = pcall(require, 'health')
  local h = vim.health or (ok and legacy) or {}
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
    info = h.info or h.report_info,
  }
end

function M.check()
  local report = reporter()
  local memq = require('memq')
  local rpc = require('memq.rpc')
  report.start('memq')
  local v = vim.version()
  report.ok(('plugin %s on Neovim %d.%d.%d'):format(memq.version, v.major, v.minor, v.patch))
  local socket = memq.config.socket or rpc.default_socket_path()
  report.info('socket: ' .. socket)
  local stat = vim.loop.fs_stat(socket)
  if not stat then
    report.error('memqd is not running: ' .. socket .. ' does not exist',
      { 'start it with `memq daemon start`, or enable the systemd user socket: systemctl --user enable --now memqd.socket' })
    return
  end
  if stat.type ~= 'socket' then
    report.error(socket .. ' is not a socket (' .. tostring(stat.type) .. ')')
    return
  end
  report.ok('the socket exists')
  local client = rpc.new({ socket = socket, timeout_ms = memq.config.timeout_ms })
  local err, status = client:request_sync('daemon/status', vim.empty_dict())
  client:close()
  if err then
    report.error('memqd does not answer on ' .. socket .. ': ' .. tostring(err.message),
      { 'restart it with `memq daemon restart`' })
    return
  end
  report.ok(('memqd %s answers (pid %s, up %d s)'):format(tostring(status.version), tostring(status.pid),
    math.floor(tonumber(status.uptime_s) or 0)))
  if status.version ~= memq.version then
    report.warn(('memqd is %s, the plugin %s'):format(tostring(status.version), memq.version))
  end
end

return M
