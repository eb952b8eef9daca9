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
    /// Pairwise: the next pair.
    NextPair,
    /// Pairwise: the previous pair.
    PrevPair,
    /// Pairwise: the left candidate (A) is better: your blind verdict, or settling a tie or flip.
    PreferA,
    /// Pairwise: the right candidate (B) is better.
    PreferB,
    /// Pairwise: a tie.
    PreferTie,
    /// Pairwise: one more vote on the pair, counted with the judges'.
    VotePair,
    /// Pairwise: decline to decide the pair.
    AbstainPair,
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
    /// The home screen: go on with an unfinished session (`moot run --resume`).
    ResumeSession,
    Refresh,
    /// `moot optimize`: go on with the feedback as the model wrote it.
    ContinueLoop,
    /// `moot optimize`: edit the feedback before the rewrite.
    EditFeedback,
    /// `moot optimize`: take the proposed rewrite.
    AcceptRewrite,
    /// `moot optimize`: edit the proposed rewrite, then take it.
    EditRewrite,
    /// `moot optimize`: keep the current prompt.
    RejectRewrite,
    /// `moot optimize`: continue from the selected iteration's prompt.
    RollBack,
    /// `moot optimize`: stop and keep the selected iteration's prompt.
    ChoosePrompt,
    /// `moot optimize`: stop and keep the best held-out prompt.
    StopOptimize,
    /// `moot optimize`: pin the selected example into every draw (again: unpin).
    PinExample,
    /// `moot optimize`: leave the selected example out of later draws.
    ReplaceExample,
    /// `moot optimize`: add a training example, by id, to every later draw.
    AddExample,
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
    /// In an overlay: send, run, choose or accept what it holds.
    Confirm,
    /// In an overlay: close it without doing anything.
    Cancel,
    /// In a picker: the previous item.
    MoveUp,
    /// In a picker: the next item.
    MoveDown,
    /// In a text box of several lines: a new line.
    NewLine,
    /// On the command line: complete the word.
    Complete,
    /// On the command line: close it when it is empty (otherwise the key edits the line).
    CancelIfEmpty,
    /// In a picker: choose the first item (and so on to the ninth).
    #[serde(rename = "choose_1")]
    Choose1,
    #[serde(rename = "choose_2")]
    Choose2,
    #[serde(rename = "choose_3")]
    Choose3,
    #[serde(rename = "choose_4")]
    Choose4,
    #[serde(rename = "choose_5")]
    Choose5,
    #[serde(rename = "choose_6")]
    Choose6,
    #[serde(rename = "choose_7")]
    Choose7,
    #[serde(rename = "choose_8")]
    Choose8,
    #[serde(rename = "choose_9")]
    Choose9,
}

/// The picker's choose-by-number actions, first to ninth.
pub const CHOOSE: [Action; 9] = [
    Action::Choose1,
    Action::Choose2,
    Action::Choose3,
    Action::Choose4,
    Action::Choose5,
    Action::Choose6,
    Action::Choose7,
    Action::Choose8,
    Action::Choose9,
];

impl Action {
    /// For a choose-by-number action, the item it chooses (from 1).
    pub fn choice(self) -> Option<usize> {
        CHOOSE.iter().position(|a| *a == self).map(|i| i + 1)
    }

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
                | Action::PreferA
                | Action::PreferB
                | Action::PreferTie
                | Action::VotePair
                | Action::AbstainPair
                | Action::ContinueLoop
                | Action::EditFeedback
                | Action::AcceptRewrite
                | Action::EditRewrite
                | Action::RejectRewrite
                | Action::RollBack
                | Action::ChoosePrompt
                | Action::StopOptimize
                | Action::PinExample
                | Action::ReplaceExample
                | Action::AddExample
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
            Action::NextPair => "next pair (pairwise)",
            Action::PrevPair => "previous pair (pairwise)",
            Action::PreferA => "A (left) better: your blind verdict, or settle",
            Action::PreferB => "B (right) better: your blind verdict, or settle",
            Action::PreferTie => "tie: your blind verdict, or settle",
            Action::VotePair => "an extra vote on the pair (one more judge)",
            Action::AbstainPair => "abstain: leave the pair to the panel",
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
            Action::ResumeSession => "resume an unfinished session",
            Action::Refresh => "refresh",
            Action::ContinueLoop => "go on with the feedback as written",
            Action::EditFeedback => "edit the feedback before the rewrite",
            Action::AcceptRewrite => "accept the proposed rewrite",
            Action::EditRewrite => "edit the rewrite, then accept it",
            Action::RejectRewrite => "reject the rewrite (keep the prompt)",
            Action::RollBack => "roll back to the selected iteration",
            Action::ChoosePrompt => "stop, keep the selected iteration's prompt",
            Action::StopOptimize => "stop, keep the best held-out prompt",
            Action::PinExample => "pin / unpin the selected example",
            Action::ReplaceExample => "replace the selected example in later draws",
            Action::AddExample => "add a training example (by id) to later draws",
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
            Action::Confirm => "confirm",
            Action::Cancel => "cancel",
            Action::MoveUp => "previous item",
            Action::MoveDown => "next item",
            Action::NewLine => "new line",
            Action::Complete => "complete the word",
            Action::CancelIfEmpty => "close the line when it is empty",
            Action::Choose1 => "choose the 1st item",
            Action::Choose2 => "choose the 2nd item",
            Action::Choose3 => "choose the 3rd item",
            Action::Choose4 => "choose the 4th item",
            Action::Choose5 => "choose the 5th item",
            Action::Choose6 => "choose the 6th item",
            Action::Choose7 => "choose the 7th item",
            Action::Choose8 => "choose the 8th item",
            Action::Choose9 => "choose the 9th item",
        }
    }
}
