-- memq for Neovim: the commands and autocommands. What they do lives in lua/memq/init.lua; this file only declares
-- them, so loading the plugin costs nothing until a command runs or a file buffer is entered.

if vim.g.loaded_memq then
  return
end
vim.g.loaded_memq = true

if vim.fn.has('nvim-0.7') == 0 then
  vim.notify('memq: the plugin needs Neovim 0.7 or newer', vim.log.levels.WARN)
  return
end

vim.api.nvim_create_user_command('MemqRecall', function(command)
  -- With no argument the word under the cursor is the query (nil tells recall() to take it).
  require('memq').recall(command.args ~= '' and command.args or nil)
end, { nargs = '*', desc = "memq: show the memories of this buffer's file" })

vim.api.nvim_create_user_command('MemqSave', function(command)
  require('memq').save(command.args)
end, { nargs = '+', desc = 'memq: save a note attached to this file' })

vim.api.nvim_create_user_command('MemqHints', function()
  require('memq').show_hints()
end, { nargs = 0, desc = "memq: print this buffer's hints" })

-- :MemqHide [ID] [REASON], :MemqReject [ID] [REASON], :MemqPin [ID], :MemqUnpin [ID], :MemqRestore [ID]: without an
-- id, the memory under the cursor (in the recall window, its line; elsewhere an id under the cursor or the
-- buffer's first hint). The first word is the ID only when that whole word looks like one (memq.looks_like_id: a
-- prefix of a memory id, at least 4 hex digits, with a decimal digit unless it has 8 or more); otherwise the whole
-- text is the reason (":MemqReject 2024-era API removed" rejects the memory under the cursor).
for name, action in pairs({ MemqHide = 'hide', MemqReject = 'reject', MemqPin = 'pin', MemqUnpin = 'unpin',
                            MemqRestore = 'restore' }) do
  vim.api.nvim_create_user_command(name, function(command)
    local memq = require('memq')
    local id, reason = nil, command.args
    local first, rest = command.args:match('^%s*(%S+)%s*(.*)$')
    if first and memq.looks_like_id(first) then
      id, reason = first, rest
    end
    memq.act(action, id, reason ~= '' and reason or nil)
  end, { nargs = '*', desc = 'memq: ' .. action .. ' the memory under the cursor (or ID)' })
end

vim.api.nvim_create_user_command('MemqSearch', function(command)
  require('memq').search(command.args)
end, { nargs = '+', desc = "memq: search the project's memories and pick one" })

local group = vim.api.nvim_create_augroup('memq', { clear = true })
vim.api.nvim_create_autocmd('BufEnter', {
  group = group,
  desc = "memq: hints for the file being entered",
  callback = function(event)
    -- Entering a file is the editor's "user turn": it restarts the daemon's per-turn dedup.
    require('memq').refresh_hints(event.buf, { new_turn = true })
  end,
})
vim.api.nvim_create_autocmd('BufWipeout', {
  group = group,
  desc = 'memq: forget the hints of a wiped buffer',
  callback = function(event)
    require('memq').forget_buffer(event.buf)
  end,
})
