//! The vocabulary of keys: every key press maps to an [`Action`].

use serde::{Deserialize, Serialize};

/// Something a key can ask for. Names are the snake_case strings used in the
/// `[keys.<mode>]` tables of the config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    Zoom,
    Back,
    ScrollUp,
    ScrollDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    Transcript,
    Comment,
    Override,
    Speaker,
    TogglePause,
    Pause,
    Resume,
    Step,
    Stop,
    Rate,
    /// Edit a dimension's evaluation steps (G-Eval, before scoring).
    EditSteps,
    /// Accept the selected change of a meta-evaluator (SAGEval).
    AcceptChange,
    /// Reject it: the evaluator's value comes back.
    RejectChange,
    NextChange,
    PrevChange,
    CommandLine,
    Search,
    SearchNext,
    SpeedUp,
    SpeedDown,
    NextTurn,
    JumpStart,
    JumpEnd,
    Open,
    NewRun,
    Refresh,
    /// Persona review: take back a rejection.
    Accept,
    /// Persona review: leave the selected item out of the panel.
    Reject,
    /// Persona review: new wording for a stakeholder or perspective.
    Edit,
    RenameGroup,
    MergeGroup,
    SplitGroup,
    CapGroup,
    EditPersona,
    Regenerate,
    SavePanel,
    RunPanel,
}

impl Action {
    /// Whether the action changes the session (and so is refused in a replay).
    pub fn is_steering(self) -> bool {
        matches!(
            self,
            Action::Comment
                | Action::Override
                | Action::Speaker
                | Action::Pause
                | Action::Resume
                | Action::Stop
                | Action::Rate
                | Action::EditSteps
                | Action::AcceptChange
                | Action::RejectChange
        )
    }

    /// What the action does, for the help overlay and the footer.
    pub fn describe(self) -> &'static str {
        match self {
            Action::Quit => "quit",
            Action::Help => "all keys",
            Action::FocusNext => "next pane",
            Action::FocusPrev => "previous pane",
            Action::Zoom => "zoom the focused pane",
            Action::Back => "back / close",
            Action::ScrollUp => "scroll up",
            Action::ScrollDown => "scroll down",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "go to the top",
            Action::Bottom => "go to the end (follow)",
            Action::Transcript => "transcript",
            Action::Comment => "comment to the panel",
            Action::Override => "override a score",
            Action::Speaker => "choose the next speaker",
            Action::TogglePause => "pause / resume",
            Action::Pause => "pause",
            Action::Resume => "resume",
            Action::Step => "one turn (paused)",
            Action::Stop => "stop, go to aggregation",
            Action::Rate => "your own rating",
            Action::EditSteps => "edit evaluation steps (G-Eval)",
            Action::AcceptChange => "accept the selected SAGE change",
            Action::RejectChange => "reject it (evaluator's value back)",
            Action::NextChange => "next SAGE change",
            Action::PrevChange => "previous SAGE change",
            Action::CommandLine => "command line",
            Action::Search => "search the transcript",
            Action::SearchNext => "next match",
            Action::SpeedUp => "faster",
            Action::SpeedDown => "slower",
            Action::NextTurn => "step to the next turn",
            Action::JumpStart => "jump to the start",
            Action::JumpEnd => "jump to the end",
            Action::Open => "open / replay",
            Action::NewRun => "new run from a panel",
            Action::Refresh => "refresh",
            Action::Accept => "accept (take back a rejection)",
            Action::Reject => "reject: leave it out of the panel",
            Action::Edit => "edit a stakeholder's name or a perspective",
            Action::RenameGroup => "rename the group",
            Action::MergeGroup => "merge the group into another",
            Action::SplitGroup => "split the perspective into a new group",
            Action::CapGroup => "cap the group's personas",
            Action::EditPersona => "edit a persona field (field: text)",
            Action::Regenerate => "write the persona again",
            Action::SavePanel => "save the panel",
            Action::RunPanel => "save and run the panel on the item",
        }
    }
}
