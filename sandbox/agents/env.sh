# Sourced by every `bash -c` of the agent phase (Harbor's exec), through BASH_ENV: the pinned agent CLIs and
# their Node.js come first on PATH, without changing the task image's own PATH for the verifier.
case ":$PATH:" in
  *:/opt/agents/bin:*) ;;
  *) export PATH="/opt/agents/bin:$PATH" ;;
esac
