# bash completion for memq(1): every command and option of client/cli_main.cc and client/commands.cc, and memory
# ids from the running daemon (`memq __complete-ids`, which never starts one).
# Installed as share/bash-completion/completions/memq (loaded on demand by bash-completion).

_memq_commands="save get update list search recall hide restore pin unpin supersede reject unreject purge
  attach detach hint cochange blast refresh review audit export import stats team status daemon mcp hook bench help version"

# Options of each command (global options are handled separately).
_memq_command_options() {
    case "$1" in
        save) echo "--details --category --topic --file --source --merge-topics --no-anchor" ;;
        update) echo "--summary --details --category --topic --file" ;;
        list) echo "--category --topic --pinned --state --file --limit --offset" ;;
        search) echo "--limit --ranker --explain" ;;
        recall) echo "--file --limit --max-chars --ranker --threshold --explain --no-mark" ;;
        hide) echo "--reason" ;;
        supersede) echo "--by" ;;
        reject) echo "--reason" ;;
        purge) echo "--yes" ;;
        hint) echo "--file --query" ;;
        cochange) echo "--limit" ;;
        audit) echo "--id --limit --since" ;;
        export) echo "--state" ;;
        import) echo "--from-empryo" ;;
        daemon) echo "--foreground" ;;
        bench) echo "--dataset --ranker --limit --max-splits --no-semantic --keep --lines --dump --json --n --clients" ;;
    esac
}

# The 8-character id prefixes of the daemon's memories; nothing when no daemon runs. The daemon is the one on the
# socket a --socket before the command names ($socket, set by _memq), if any.
_memq_ids() {
    local -a socket_args=()
    [[ -n "$socket" ]] && socket_args=(--socket "$socket")
    "${words[0]:-memq}" "${socket_args[@]}" __complete-ids 2>/dev/null | cut -f1
}

_memq() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null 2>&1; then
        _init_completion -n = || return
    else
        COMPREPLY=()
        cur="${COMP_WORDS[COMP_CWORD]}"
        prev="${COMP_WORDS[COMP_CWORD-1]}"
        words=("${COMP_WORDS[@]}")
        cword=$COMP_CWORD
    fi

    # Find the command: the first word after the global options (and their values), and the --socket among them.
    local i=1 command="" command_index=0 socket=""
    while [[ $i -lt $cword ]]; do
        case "${words[i]}" in
            --socket) [[ $((i + 1)) -lt $cword ]] && socket="${words[i+1]}"; i=$((i + 2)); continue ;;
            --socket=*) socket="${words[i]#--socket=}"; i=$((i + 1)); continue ;;
            --project|--scope|--tab) i=$((i + 2)); continue ;;
            --color) i=$((i + 1)); [[ "${words[i]}" == auto || "${words[i]}" == always || "${words[i]}" == never ]] && i=$((i + 1)); continue ;;
            --json|--help|-h|--version|--no-pager) i=$((i + 1)); continue ;;
            -*) i=$((i + 1)); continue ;;
            *) command="${words[i]}"; command_index=$i; break ;;
        esac
    done
    [[ "$socket" == "~/"* ]] && socket="$HOME/${socket#"~/"}"

    # --opt=VALUE forms.
    local option="$prev" inline=""
    if [[ "$cur" == --*=* ]]; then
        option="${cur%%=*}"
        cur="${cur#*=}"
        inline=1
    fi

    # Values of options.
    case "$option" in
        --scope) COMPREPLY=($(compgen -W "project global team" -- "$cur")); return ;;
        --color)
            COMPREPLY=($(compgen -W "auto always never" -- "$cur"))
            # The value is optional: after a bare --color before the command, the word may be the command as well.
            [[ -z "$inline" && -z "$command" ]] && COMPREPLY+=($(compgen -W "$_memq_commands" -- "$cur"))
            return ;;
        --by|--id) COMPREPLY=($(compgen -W "$(_memq_ids)" -- "$cur")); return ;;
        --socket|--file|--from-empryo|--dump) COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
        --project|--dataset) COMPREPLY=($(compgen -d -- "$cur")); compopt -o filenames 2>/dev/null; return ;;
        --category) COMPREPLY=($(compgen -W "pref decision gotcha context" -- "$cur")); return ;;
        --source) COMPREPLY=($(compgen -W "user agent" -- "$cur")); return ;;
        --state) COMPREPLY=($(compgen -W "active hidden superseded rejected all" -- "$cur")); return ;;
        --ranker) COMPREPLY=($(compgen -W "default reference" -- "$cur")); return ;;
        --details|--topic|--summary|--limit|--offset|--max-chars|--threshold|--reason|--query|--since|--n|--max-splits|--clients|--tab)
            return ;;
    esac

    if [[ -z "$command" ]]; then
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "--json --socket --project --scope --tab --no-pager --color --help --version" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$_memq_commands" -- "$cur"))
        fi
        return
    fi

    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_memq_command_options "$command") --help --json --no-pager --color" -- "$cur"))
        return
    fi

    # Positional arguments: the position among the command's words, not counting options and their values.
    local n=0 j=$((command_index + 1))
    while [[ $j -lt $cword ]]; do
        case "${words[j]}" in
            --pinned|--explain|--no-mark|--merge-topics|--no-anchor|--yes|--foreground|--no-semantic|--keep|--lines|--json|--no-pager|--*=*) ;;
            --*) j=$((j + 1)) ;;
            *) n=$((n + 1)) ;;
        esac
        j=$((j + 1))
    done

    case "$command" in
        daemon) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "start stop restart status" -- "$cur")) ;;
        review) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "clusters stale dead" -- "$cur")) ;;
        team) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "connect status disconnect" -- "$cur")) ;;
        hook)
            if [[ $n -eq 0 ]]; then
                COMPREPLY=($(compgen -W "claude-code" -- "$cur"))
            elif [[ $n -eq 1 ]]; then
                COMPREPLY=($(compgen -W "SessionStart UserPromptSubmit PostToolUse" -- "$cur"))
            fi ;;
        bench) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "retrieval load" -- "$cur")) ;;
        hint) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "read edit write grep diff status commit shell" -- "$cur")) ;;
        cochange|blast|import)
            [[ $n -eq 0 ]] && { COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null; } ;;
        get|update|hide|restore|pin|unpin|supersede|reject|unreject|purge)
            [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "$(_memq_ids)" -- "$cur")) ;;
        help) [[ $n -eq 0 ]] && COMPREPLY=($(compgen -W "$_memq_commands" -- "$cur")) ;;
        attach|detach)
            if [[ $n -eq 0 ]]; then
                COMPREPLY=($(compgen -W "$(_memq_ids)" -- "$cur"))
            else
                COMPREPLY=($(compgen -f -- "$cur")); compopt -o filenames 2>/dev/null
            fi ;;
    esac
}

complete -F _memq memq
