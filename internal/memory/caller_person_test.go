package memory

import "testing"

// TestAsPersonMarksACopy: AsPerson marks the caller it returns, keeps its
// keys, and leaves the caller it was called on an agent's.
func TestAsPersonMarksACopy(t *testing.T) {
	agent := NewCaller(Key{ID: 1, Agent: "a", Role: RoleWrite, Project: ProjectRef{Workspace: "w", Project: "p"}})
	person := agent.AsPerson()
	if !person.Person() || agent.Person() {
		t.Fatalf("person %v, agent %v; want only the copy marked", person.Person(), agent.Person())
	}
	if person.Owner() != agent.Owner() || person.First() != agent.First() {
		t.Errorf("AsPerson changed the keys: %+v", person.Keys())
	}
	if (Caller{}).Person() {
		t.Error("a zero caller is a person")
	}
}
