module github.com/longhorn-go/longhorn/hack/budgets

go 1.26

require (
	github.com/nakabonne/nestif v0.3.1
	github.com/uudashr/gocognit v1.3.0
)

require golang.org/x/tools v0.42.0 // indirect
